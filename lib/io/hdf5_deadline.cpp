#include "io/hdf5_deadline.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace lmscope::h5 {

namespace {

using Clock = std::chrono::steady_clock;

// One reader thread uses the wrapper at a time (libhdf5's serial build is not thread-safe),
// so one armed deadline is enough; the watchdog reads it.
std::atomic<int64_t> g_deadline_ns{0};   // 0: nothing armed
std::atomic<int> g_depth{0};
std::mutex g_file_mutex;
std::string g_file;
const char* g_tool = "lmscope";
int g_exit_status = 1;

int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(); }

void watchdog() {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    const int64_t d = g_deadline_ns.load(std::memory_order_relaxed);
    if (d == 0 || now_ns() < d) continue;
    std::string file;
    {
      std::lock_guard<std::mutex> lock(g_file_mutex);
      file = g_file;
    }
    std::fprintf(stderr,
                 "%s: error: libhdf5 spent more than %d s in one read of '%s': a damaged file (libhdf5 1.10.8 loops "
                 "forever on some; LMSCOPE_HDF5_READ_SECONDS sets the limit)\n",
                 g_tool, read_limit_seconds(), file.c_str());
    std::fflush(stderr);
    // A handler on SIGTERM (trace_writer's, while a trace is being written) removes the
    // temporary trace before the signal ends the process; without one, exit with the tool's
    // status for bad input.
    struct sigaction cur {};
    if (::sigaction(SIGTERM, nullptr, &cur) == 0 && cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN) {
      ::kill(::getpid(), SIGTERM);
      std::this_thread::sleep_for(std::chrono::seconds(5));
    }
    std::_Exit(g_exit_status);
  }
}

}  // namespace

int read_limit_seconds() {
  static const int limit = [] {
    const char* v = std::getenv("LMSCOPE_HDF5_READ_SECONDS");
    if (!v || !*v) return 60;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    return (*end == '\0' && n >= 0 && n <= 86400) ? int(n) : 60;
  }();
  return limit;
}

void set_read_deadline_tool(const char* tool, int exit_status) {
  g_tool = tool;
  g_exit_status = exit_status;
}

ReadDeadline::ReadDeadline(const std::string& file) {
  const int limit = read_limit_seconds();
  if (limit == 0 || g_depth.fetch_add(1) != 0) return;   // off, or an outer read is timed already
  armed_ = true;
  static std::once_flag started;
  std::call_once(started, [] { std::thread(watchdog).detach(); });
  {
    std::lock_guard<std::mutex> lock(g_file_mutex);
    g_file = file;
  }
  g_deadline_ns.store(now_ns() + int64_t(limit) * 1000000000, std::memory_order_relaxed);
}

ReadDeadline::~ReadDeadline() {
  if (read_limit_seconds() == 0) return;
  if (armed_) g_deadline_ns.store(0, std::memory_order_relaxed);
  g_depth.fetch_sub(1);
}

}  // namespace lmscope::h5
