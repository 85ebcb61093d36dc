// Atomic writing: a trace path holds a complete trace or nothing; no .partial survives.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/test_util.h"
#include "io/hdf5.h"
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
  EXPECT_FALSE(fs::exists(path + ".partial"));
}
}  // namespace

TEST(TraceAtomic, PartialWhileWritingThenRenamed) {
  TempDir dir;
  std::string path = dir.file("t.h5");
  TraceWriter w(path);
  EXPECT_TRUE(fs::exists(path + ".partial"));   // created at construction
  EXPECT_FALSE(fs::exists(path));
  w.begin_step({0, "prefill", false, 0, 1, 1});
  w.commit();
  EXPECT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".partial"));
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
  EXPECT_FALSE(fs::exists("/proc/lmscope-test-trace.h5.partial"));
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
  EXPECT_FALSE(fs::exists(path + ".partial"));
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

TEST(TraceAtomic, FailedCommitRemovesPartialAndKeepsOldTrace) {
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
  EXPECT_FALSE(fs::exists(path + ".partial"));
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

TEST(TraceAtomic, LeavesAForeignPartialAlone) {
  TempDir dir;
  std::string path = dir.file("t.h5");
  fs::create_directory(path + ".partial");   // not ours, not a regular file
  std::string m = construct_error(path);
  EXPECT_NE(m.find(".partial' exists and is not a regular file"), std::string::npos) << m;
  EXPECT_TRUE(fs::is_directory(path + ".partial"));
}
