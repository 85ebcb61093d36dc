// TraceReader refuses, in one line, anything that is not a complete lmscope trace.
#include <gtest/gtest.h>

#include "io/hdf5.h"
#include "tests/test_util.h"
#include "trace/trace_reader.h"

using namespace lmscope;
using namespace lmscope::testing_util;

namespace {
std::string open_error(const std::string& path) {
  try {
    TraceReader r(path);
  } catch (const std::runtime_error& e) {
    std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    return m;
  }
  return "";
}
}  // namespace

TEST(TraceReader, RefusesMissingFile) {
  TempDir dir;
  std::string p = dir.file("absent.h5");
  EXPECT_EQ(open_error(p), "cannot open trace '" + p + "': No such file or directory");
}

TEST(TraceReader, RefusesNonHdf5) {
  TempDir dir;
  std::string p = dir.file("notes.txt");
  std::ofstream(p) << "hello\n";
  EXPECT_EQ(open_error(p), "'" + p + "' is not an HDF5 file");
  std::string empty = dir.file("empty.h5");
  std::ofstream{empty};
  EXPECT_EQ(open_error(empty), "'" + empty + "' is not an HDF5 file");
}

TEST(TraceReader, RefusesHdf5ThatIsNotATrace) {
  TempDir dir;
  std::string p = dir.file("other.h5");
  {
    h5::File f = h5::File::create(p);
    f.root().set_attr("complete", int64_t(1));
    f.close();
  }
  EXPECT_EQ(open_error(p), "'" + p + "' is not an lmscope trace (no 'format' attribute)");
  std::string q = dir.file("wrongformat.h5");
  {
    h5::File f = h5::File::create(q);
    f.root().set_attr("format", std::string("something-else"));
    f.close();
  }
  EXPECT_NE(open_error(q).find("is not an lmscope trace"), std::string::npos);
}

TEST(TraceReader, RefusesIncompleteTrace) {
  TempDir dir;
  std::string p = dir.file("inc.h5");
  {
    h5::File f = h5::File::create(p);
    f.root().set_attr("format", std::string("lmscope-trace"));
    f.root().set_attr("format_version", int64_t(1));
    f.root().create_group("step_0000");
    f.close();
  }
  EXPECT_EQ(open_error(p), "'" + p + "' is incomplete (no complete=1)");
  {   // complete = 0 is just as incomplete
    h5::File f = h5::File::create(p);
    f.root().set_attr("format", std::string("lmscope-trace"));
    f.root().set_attr("complete", int64_t(0));
    f.close();
  }
  EXPECT_EQ(open_error(p), "'" + p + "' is incomplete (no complete=1)");
}

TEST(TraceReader, AcceptsSyntheticTrace) {
  TempDir dir;
  std::string p = dir.file("ok.h5");
  write_synthetic_trace(p);
  TraceReader r(p);
  EXPECT_EQ(r.n_steps(), 2);
  EXPECT_EQ(r.hooks(0).front(), "tokens.input_ids");
  EXPECT_EQ(r.hooks(0).back(), "sample.chosen");
  EXPECT_EQ(r.read(1, "layers.0.attn.scores").shape, (Shape{2, 2, 1, 5}));
}
