// Reading a trace someone else made, in a child process. libhdf5 1.10.8 has parser bugs on
// damaged files that no caller can check for (docs/trace-format.md, "Traces from an untrusted
// source": SIGSEGV in H5C_protect, a read of freed memory in H5Aexists, ...). The tools that
// only read a trace (lmscope-report, lmscope-step, lmscope-diff) run their whole body in a
// forked child, so such a crash ends in one line from the parent instead of a core dump.
//
// Cost: one fork() of a process that has not loaded anything yet, and a waitpid(); the child
// writes to the same stdout, stderr and files, so nothing is copied back (docs/trace-format.md
// has the measurement). Fork before anything touches libhdf5: its read-deadline watchdog
// thread (io/hdf5_deadline.h) is started in the child, where the reads are.
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "tools/cli_common.h"

namespace lmscope::cli {

// Runs `body` as run_tool(tool, body) would, in a child; returns its exit status. A child
// ended by a signal other than the user's (Ctrl-C, SIGTERM, SIGHUP, SIGPIPE, which end this
// process the same way) gives one line naming `file` and `crash_status` (the tool's status for
// bad input). Without fork() (EAGAIN), `body` runs in this process.
template <class F>
int run_contained(const char* tool, const std::string& file, int crash_status, F&& body) {
  std::fflush(stdout);
  std::fflush(stderr);
  struct termios saved {};
  const bool tty = ::isatty(0) && ::tcgetattr(0, &saved) == 0;   // lmscope-step puts it in raw mode
  const pid_t pid = ::fork();
  if (pid < 0) return run_tool(tool, body);
  if (pid == 0) {
    const int code = run_tool(tool, body);
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(code);   // no exit handlers: libhdf5's would run on a library the parent never used
  }
  // Ctrl-C reaches the child too (one process group) and ends it; the parent waits for that.
  struct sigaction ign {}, old_int {}, old_quit {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  ::sigaction(SIGINT, &ign, &old_int);
  ::sigaction(SIGQUIT, &ign, &old_quit);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGQUIT, &old_quit, nullptr);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  const int sig = WTERMSIG(status);
  if (tty) ::tcsetattr(0, TCSANOW, &saved);
  if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGPIPE || sig == SIGQUIT) {
    ::signal(sig, SIG_DFL);
    ::raise(sig);   // end as the child did, as if it had been this process
  }
  std::fprintf(stderr,
               "%s: error: reading '%s' ended in signal %d (%s): a damaged file crashed the reader (libhdf5 1.10.8 "
               "has such bugs; docs/trace-format.md, \"Traces from an untrusted source\")\n",
               tool, file.c_str(), sig, ::strsignal(sig));
  return crash_status;
}

}  // namespace lmscope::cli
