// A time limit on each read through the HDF5 wrapper (lib/io/hdf5.h). Debian's libhdf5 1.10.8
// loops forever inside H5C_protect on some damaged files (docs/trace-format.md, "Traces from
// an untrusted source"); lmscope cannot stop the loop, but it can refuse to wait for it.
//
// A ReadDeadline lives on the stack of every wrapper method that reads a file. When one such
// call has run longer than the limit, a watchdog thread prints one line naming the file and
// exits with status 1. While a trace is being written (trace/trace_writer.h handles SIGTERM),
// it sends SIGTERM instead, so that the temporary trace is removed as on Ctrl-C.
//
// The limit: 60 s, far above any sound read (the largest dataset a trace holds, the logits of
// every position, reads in well under a second); LMSCOPE_HDF5_READ_SECONDS=N sets it, 0 turns
// it off. Cost per wrapper call: a clock read and a copy of the file name, nothing per element.
#pragma once
#include <string>

namespace lmscope::h5 {

class ReadDeadline {
 public:
  explicit ReadDeadline(const std::string& file);   // nested deadlines keep the outermost
  ~ReadDeadline();
  ReadDeadline(const ReadDeadline&) = delete;
  ReadDeadline& operator=(const ReadDeadline&) = delete;

 private:
  bool armed_ = false;
};

// The limit in seconds (0: none), read once from LMSCOPE_HDF5_READ_SECONDS.
int read_limit_seconds();

// How the deadline's line starts and the status it exits with: "<tool>: error: libhdf5 spent
// ...", the tool's own exit status for bad input (lmscope-diff: 2, whose 1 means "traces
// differ"). Default: "lmscope", 1. Call once at the start of main (not thread-safe).
void set_read_deadline_tool(const char* tool, int exit_status);

}  // namespace lmscope::h5
