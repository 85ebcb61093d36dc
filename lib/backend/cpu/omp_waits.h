// How an idle OpenMP thread waits, by default: spinning a bounded while, then sleeping.
//
// libgomp's own default (OMP_WAIT_POLICY unset) spins 300,000 times before it sleeps, a few
// milliseconds: on a quiet machine the threads of a decode step meet again within that, but on
// a busy one (2 threads, other processes on both cores) the thread that waits burns its core
// while the one it waits for is not running, and decode collapsed to a few tokens/s.
// lmscope's tools spin kDefaultSpinCount times instead (GOMP_SPINCOUNT; docs/benchmarks.md,
// "A busy machine", has the measurements). OMP_WAIT_POLICY or GOMP_SPINCOUNT in the
// environment is the user's choice and is left alone.
#pragma once

namespace lmscope::cpu {

inline constexpr const char* kDefaultSpinCount = "1000";

// libgomp reads its environment once, when it is loaded, before main: a setting made later is
// not seen. So, when neither variable is set and more than one OpenMP thread would run, this
// sets GOMP_SPINCOUNT and executes the program again (/proc/self/exe, the same argv); it
// returns when there is nothing to do, or when the exec failed (the run goes on with libgomp's
// default). Call it first thing in main, before any parallel region.
void settle_openmp_waits(char** argv);

}  // namespace lmscope::cpu
