// Atomic writing: a trace path holds a complete trace or nothing; no temporary survives.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "tests/test_util.h"
#include "io/hdf5.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

using namespace lmscope;
using namespace lmscope::testing_util;
namespace fs = std::filesystem;

namespace {
// The one-line error from constructing a writer on `path`, or "" if it succeeded.
std::string construct_error(const std::string& path) {
  try {
    TraceWriter w(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}
void expect_one_line_error(const std::string& path, const std::string& reason_part) {
  std::string m = construct_error(path);
  ASSERT_FALSE(m.empty()) << "no error for " << path;
  EXPECT_EQ(m.rfind("cannot write trace '" + path + "': ", 0), 0u) << m;
  EXPECT_NE(m.find(reason_part), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  if (fs::is_directory(dir, ec)) {
    EXPECT_TRUE(temporaries_in(dir).empty());
  }
}
}  // namespace

TEST(TraceAtomic, TemporaryWhileWritingThenRenamed) {
  TempDir dir;
  std::string path = dir.file("t.h5");
  TraceWriter w(path);
  std::string tmp = w.temp_path();
  EXPECT_EQ(tmp.rfind(path + ".partial." + std::to_string(::getpid()) + ".", 0), 0u) << tmp;
  EXPECT_EQ(temporaries_in(dir.path()), std::vector<std::string>{tmp});   // created at construction
  EXPECT_FALSE(fs::exists(path));
  w.begin_step({0, "prefill", false, 0, 1, 1});
  w.commit();
  EXPECT_TRUE(fs::exists(path));
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
  EXPECT_EQ(w.temp_path(), "");
}

TEST(TraceAtomic, NonexistentDirectory) {
  TempDir dir;
  expect_one_line_error(dir.file("missing/sub/t.h5"), "does not exist");
}

TEST(TraceAtomic, ParentIsAFile) {
  TempDir dir;
  std::ofstream(dir.file("plain")) << "x";
  expect_one_line_error(dir.file("plain/t.h5"), "is not a directory");
}

TEST(TraceAtomic, OutputIsADirectory) {
  TempDir dir;
  fs::create_directory(dir.file("sub"));
  expect_one_line_error(dir.file("sub"), "is a directory");
  EXPECT_TRUE(fs::is_directory(dir.file("sub")));
}

TEST(TraceAtomic, ReadOnlyDirectory) {
  TempDir dir;
  fs::create_directory(dir.file("ro"));
  ::chmod(dir.file("ro").c_str(), 0555);
  if (::access(dir.file("ro").c_str(), W_OK) == 0)
    GTEST_SKIP() << "running as root: a 0555 directory is still writable (see UnwritableSystemPath)";
  expect_one_line_error(dir.file("ro/t.h5"), "not writable");
}

TEST(TraceAtomic, UnwritableSystemPath) {
  // /proc refuses new files even to root, so this exercises the HDF5 create failure path.
  if (!fs::is_directory("/proc")) GTEST_SKIP() << "no /proc";
  std::string m = construct_error("/proc/lmscope-test-trace.h5");
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.rfind("cannot write trace '/proc/lmscope-test-trace.h5': ", 0), 0u) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_TRUE(temporaries_in("/proc").empty());
}

TEST(TraceAtomic, ExceptionBeforeCommitRemovesPartial) {
  TempDir dir;
  std::string path = dir.file("t.h5");
  try {
    TraceWriter w(path);
    w.begin_step({0, "prefill", false, 0, 2, 2});
    float x[4] = {1, 2, 3, 4};
    w.write("embed", "B,T,D", {1, 2, 2}, x);
    throw std::runtime_error("the forward pass failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(TraceAtomic, WriterErrorRemovesPartial) {
  TempDir dir;
  std::string path = dir.file("t.h5");
  EXPECT_THROW(
      {
        TraceWriter w(path);
        w.begin_step({0, "prefill", false, 0, 2, 2});
        float x[4] = {};
        w.write("embed", "B,T", {1, 2, 2}, x);   // axes do not match: throws
      },
      std::logic_error);
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(TraceAtomic, FailedCommitRemovesTemporaryAndKeepsWhatAppeared) {
  TempDir dir;
  std::string path = dir.file("t.h5");
  TraceWriter w(path);
  // Something appears at the output path meanwhile: a non-empty directory rename cannot replace.
  fs::create_directories(path + "/blocker");
  try {
    w.commit();
    FAIL() << "commit should fail";
  } catch (const std::runtime_error& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("cannot write trace '" + path + "': ", 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
  EXPECT_TRUE(fs::is_directory(path + "/blocker"));
}

TEST(TraceAtomic, CommitReplacesAnExistingTrace) {
  TempDir dir;
  std::string path = dir.file("t.h5");
  write_synthetic_trace(path);
  auto before = fs::file_size(path);
  {
    TraceWriter w(path);   // an abandoned rewrite leaves the old trace untouched
  }
  EXPECT_EQ(fs::file_size(path), before);
  TraceWriter w(path);
  w.commit();
  EXPECT_LT(fs::file_size(path), before);
}

TEST(TraceAtomic, NeverReplacesAFileThatIsNotATrace) {
  TempDir dir;
  std::string text = dir.file("weights.safetensors");
  std::ofstream(text) << "precious";
  expect_one_line_error(text, "is not an lmscope trace; not replacing it");
  EXPECT_EQ(read_text(text), "precious");

  std::string other = dir.file("other.h5");   // HDF5, but not a trace
  h5::File::create(other).close();
  expect_one_line_error(other, "is not an lmscope trace");
  EXPECT_TRUE(h5::File::is_hdf5(other));
}

TEST(TraceAtomic, NeverReplacesASpecialFile) {
  // A FIFO stands in for /dev/null & co.: as root, rename() would replace them.
  TempDir dir;
  std::string fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_one_line_error(fifo, "is not a regular file");
  EXPECT_TRUE(fs::is_fifo(fifo));
}

TEST(TraceAtomic, LeavesTheUsersOwnPartialFilesAlone) {
  // A user's own `<out>.partial` (or a hard link named so) is not the writer's temporary:
  // the writer opens only names it created itself with O_EXCL, so that file and its link
  // target stay as they were.
  TempDir dir;
  std::string path = dir.file("t.h5");
  std::string precious = dir.file("precious.txt");
  std::ofstream(precious) << "precious";
  ASSERT_EQ(::link(precious.c_str(), (path + ".partial").c_str()), 0);
  fs::create_directory(path + ".partial.1.0000000000000000");   // even a name of the writer's pattern
  {
    TraceWriter abandoned(path);
  }
  TraceWriter w(path);
  w.commit();
  EXPECT_EQ(read_text(precious), "precious");
  EXPECT_EQ(read_text(path + ".partial"), "precious");
  EXPECT_TRUE(fs::is_directory(path + ".partial.1.0000000000000000"));
  TraceReader r(path);   // and the trace is complete
}

// ---- Two writers on one output --------------------------------------------------------

TEST(TraceAtomic, SecondWriterOnTheSameOutputIsRefusedAtOnce) {
  TempDir dir;
  std::string path = dir.file("t.h5");
  TraceWriter first(path);
  first.set_root_attr("producer", std::string("first"));
  std::string m = construct_error(path);
  EXPECT_EQ(m.rfind("cannot write trace '" + path + "': another process is writing this trace", 0), 0u) << m;
  EXPECT_NE(m.find(first.temp_path()), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_TRUE(fs::exists(first.temp_path()));   // the refused writer touched nothing
  first.commit();
  TraceReader r(path);
  EXPECT_EQ(r.root_attr_string("producer"), "first");
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
}

TEST(TraceAtomic, CommitRefusesAnOutputThatAppearedMeanwhile) {
  // Two runs that both started before either had a temporary: the first to commit wins,
  // the second refuses instead of replacing it.
  TempDir dir;
  std::string path = dir.file("t.h5"), other = dir.file("other.h5");
  TraceWriter w(path);
  write_synthetic_trace(other);
  fs::rename(other, path);   // what the other run's commit does
  auto before = fs::file_size(path);
  try {
    w.commit();
    FAIL() << "commit should refuse";
  } catch (const std::runtime_error& e) {
    std::string m = e.what();
    EXPECT_EQ(m, "cannot write trace '" + path + "': '" + path +
                     "' was written by another process while this trace was being made (two runs with the same "
                     "output?); not replacing it");
  }
  EXPECT_EQ(fs::file_size(path), before);
  TraceReader r(path);
  EXPECT_EQ(r.n_steps(), 2);
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
}

TEST(TraceAtomic, CommitRefusesAnOldTraceReplacedMeanwhile) {
  TempDir dir;
  std::string path = dir.file("t.h5"), other = dir.file("other.h5");
  write_synthetic_trace(path);
  TraceWriter w(path);   // would replace the old trace...
  write_synthetic_trace(other, nullptr, kLowest, {1, 2, 3, 4});
  fs::rename(other, path);   // ...but another run replaced it first
  EXPECT_THROW(w.commit(), std::runtime_error);
  TraceReader r(path);
  EXPECT_EQ(r.generated_ids().values, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
}

namespace {
const std::string kTiny = LMSCOPE_SOURCE_DIR "/golden/models/tiny-qwen2";
const std::string kTraceTool = LMSCOPE_BINARY_DIR "/lmscope-trace";

struct ChildResult {
  int exit_code = -1;   // -1 when killed by a signal
  int signal = 0;
  std::string err;
};

// Runs lmscope-trace in a child, with `before_exec` applied in the child first (limits,
// signal dispositions); stderr is captured.
ChildResult run_trace_tool(const std::vector<std::string>& args, const std::function<void()>& before_exec = nullptr) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) throw std::runtime_error("pipe");
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipefd[1], 2);
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    if (before_exec) before_exec();
    std::vector<char*> argv{const_cast<char*>(kTraceTool.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(kTraceTool.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(pipefd[1]);
  ChildResult r;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0) r.err.append(buf, size_t(n));
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}
}  // namespace

TEST(TraceAtomic, SecondRunOfTheToolIsRefusedWhileAWriterIsAlive) {
  // Another process holds a writer on out (forked here, waiting on a pipe); the real tool
  // with the same --out refuses in one line; the first writer's trace is then complete.
  TempDir dir;
  std::string path = dir.file("t.h5");
  int ready[2], go[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    int code = 0;
    try {
      TraceWriter w(path);
      w.set_root_attr("producer", std::string("first"));
      char c = 1;
      if (::write(ready[1], &c, 1) != 1) ::_exit(3);
      if (::read(go[0], &c, 1) != 1) ::_exit(4);
      w.commit();
    } catch (...) {
      code = 2;
    }
    ::_exit(code);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ChildResult second = run_trace_tool({"--model", kTiny, "--prompt-ids", "1,2,3", "--max-new-tokens", "2", "-q", "--out", path});
  EXPECT_EQ(second.exit_code, 1) << second.err;
  EXPECT_EQ(std::count(second.err.begin(), second.err.end(), '\n'), 1) << second.err;
  EXPECT_NE(second.err.find("another process is writing this trace"), std::string::npos) << second.err;
  ASSERT_EQ(::write(go[1], &c, 1), 1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  TraceReader r(path);
  EXPECT_EQ(r.root_attr_string("producer"), "first");
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
}

TEST(TraceAtomic, TwoRunsOfTheToolAtOnceGiveOneCompleteTrace) {
  // Whatever the timing: each run ends with its trace or a one-line refusal, and the path
  // holds one complete trace with real logits, never a mix (used to: zeros marked complete).
  TempDir dir;
  std::string path = dir.file("t.h5");
  std::vector<std::string> args = {"--model", kTiny, "--prompt-ids", "1,2,3", "--max-new-tokens", "8", "-q", "--out", path};
  ChildResult results[2];
  std::thread other([&] { results[1] = run_trace_tool(args); });
  results[0] = run_trace_tool(args);
  other.join();
  int ok = 0;
  for (const ChildResult& r : results) {
    if (r.exit_code == 0) {
      ++ok;
      continue;
    }
    EXPECT_EQ(r.exit_code, 1) << "signal " << r.signal << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("cannot write trace '" + path + "'"), std::string::npos) << r.err;
  }
  EXPECT_GE(ok, 1);
  TraceReader r(path);
  HookData logits = r.read(0, "logits");
  EXPECT_TRUE(std::any_of(logits.values.begin(), logits.values.end(), [](double v) { return v != 0; }));
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
}

// ---- Signals and a full disk --------------------------------------------------------------

TEST(TraceAtomic, TerminatingSignalsRemoveTheTemporary) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    TempDir dir;
    std::string path = dir.file("t.h5");
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    pid_t pid = ::fork();
    if (pid == 0) {
      try {
        TraceWriter w(path);
        w.begin_step({0, "prefill", false, 0, 2, 2});
        std::vector<float> x(1 << 16, 1.f);
        w.write("embed", "B,T,D", {1, 2, 1 << 15}, x.data());
        char c = 1;
        if (::write(ready[1], &c, 1) != 1) ::_exit(3);
        for (;;) ::pause();
      } catch (...) {
        ::_exit(2);
      }
    }
    char c;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    ASSERT_EQ(temporaries_in(dir.path()).size(), 1u);
    ::kill(pid, sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "signal " << sig << " status " << status;
    EXPECT_TRUE(fs::is_empty(dir.path())) << "signal " << sig;
    ::close(ready[0]);
    ::close(ready[1]);
  }
}

TEST(TraceAtomic, SignalHandlersOnlyWhileAWriterIsAliveAndNeverOverAnIgnoredSignal) {
  TempDir dir;
  struct sigaction old_hup, ign, cur;
  std::memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGHUP, &ign, &old_hup), 0);   // as under nohup
  {
    TraceWriter w(dir.file("t.h5"));
    ::sigaction(SIGTERM, nullptr, &cur);
    EXPECT_NE(cur.sa_handler, SIG_DFL);
    ::sigaction(SIGHUP, nullptr, &cur);
    EXPECT_EQ(cur.sa_handler, SIG_IGN);
    ::sigaction(SIGXFSZ, nullptr, &cur);
    EXPECT_EQ(cur.sa_handler, SIG_IGN);
  }
  ::sigaction(SIGTERM, nullptr, &cur);
  EXPECT_EQ(cur.sa_handler, SIG_DFL);
  ::sigaction(SIGXFSZ, nullptr, &cur);
  EXPECT_EQ(cur.sa_handler, SIG_DFL);
  ::sigaction(SIGHUP, &old_hup, nullptr);
}

TEST(TraceAtomic, FileSizeLimitIsOneLineAndExit1) {
  // A full disk, as a file-size limit (RLIMIT_FSIZE) on the real tool: with SIGXFSZ default
  // or ignored, one line and exit 1, no signal (also none from HDF5's exit handler).
  for (bool ignore_xfsz : {false, true}) {
    TempDir dir;
    std::string path = dir.file("t.h5");
    ChildResult r = run_trace_tool(
        {"--model", kTiny, "--prompt-ids", "1,2,3", "--max-new-tokens", "2", "-q", "--out", path}, [&] {
          struct rlimit lim = {64 * 1024, 64 * 1024};
          ::setrlimit(RLIMIT_FSIZE, &lim);
          if (ignore_xfsz) ::signal(SIGXFSZ, SIG_IGN);
        });
    EXPECT_EQ(r.signal, 0) << "SIGXFSZ ignored: " << ignore_xfsz << "; " << r.err;
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("lmscope-trace: error: cannot write trace '" + path + "': ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::is_empty(dir.path())) << "a temporary or a trace was left";
  }
}
