// The RAII HDF5 wrapper: attributes, nested groups, typed datasets, one-line errors.
#include <gtest/gtest.h>

#include <numeric>

#include "io/hdf5.h"
#include "tests/test_util.h"

using namespace lmscope;
using lmscope::testing_util::TempDir;

TEST(Hdf5, AttributesRoundTrip) {
  TempDir dir;
  std::string path = dir.file("a.h5");
  {
    h5::File f = h5::File::create(path);
    f.root().set_attr("s", std::string("héllo"));
    f.root().set_attr("i", int64_t(1) << 40);
    f.root().set_attr("d", 0.25);
    f.root().set_attr("v", std::vector<int32_t>{3, -1, 7});
    f.root().set_attr("s", std::string("replaced"));   // rewriting replaces
    f.close();
  }
  h5::File f = h5::File::open_read(path);
  const h5::Group& r = f.root();
  EXPECT_EQ(r.attr_string("s"), "replaced");
  EXPECT_EQ(r.attr_int("i"), int64_t(1) << 40);
  EXPECT_DOUBLE_EQ(r.attr_double("d"), 0.25);
  EXPECT_EQ(r.attr_ints("v"), (std::vector<int32_t>{3, -1, 7}));
  EXPECT_TRUE(r.has_attr("d"));
  EXPECT_FALSE(r.has_attr("nope"));
  EXPECT_TRUE(r.attr_is_string("s"));
  EXPECT_TRUE(r.attr_is_int("i"));
  EXPECT_FALSE(r.attr_is_int("d"));
  EXPECT_EQ(r.attr_names(), (std::vector<std::string>{"d", "i", "s", "v"}));
  try {
    r.attr_int("nope");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find("nope"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST(Hdf5, NestedGroupsAndDatasets) {
  TempDir dir;
  std::string path = dir.file("g.h5");
  std::vector<float> small = {1.5f, -2.f, 3.25f, 0.f, 1e-8f, -7.f};
  // > 64 KiB: stored chunked + gzip; values must come back exactly
  std::vector<float> big(100000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = float(i) * 0.001f - 3.f;
  std::vector<int32_t> ints = {1, 0, -5, 2147483647};
  {
    h5::File f = h5::File::create(path);
    h5::Group g = f.root().create_group("a/b/c");   // parents created on demand
    EXPECT_EQ(g.name(), "/a/b/c");
    g.write_dataset("small", {2, 3}, small.data());
    g.write_dataset("ints", {4}, ints.data());
    f.root().create_group("a/b").write_dataset("big", {10, 100, 100}, big.data());
    f.root().create_group("a/b/c");   // opening an existing group again is fine
    float scalar = 4.f;
    f.root().write_dataset("scalar", {}, &scalar);
    f.root().write_dataset("empty", {0, 3}, small.data());
    EXPECT_THROW(g.write_dataset("small", {2, 3}, small.data()), std::runtime_error);   // exists
    f.close();
  }
  h5::File f = h5::File::open_read(path);
  EXPECT_TRUE(f.root().exists("a/b/c/small"));
  EXPECT_FALSE(f.root().exists("a/x/c"));
  EXPECT_EQ(f.root().kind("a/b"), h5::ChildKind::Group);
  EXPECT_EQ(f.root().kind("a/b/big"), h5::ChildKind::Dataset);
  EXPECT_EQ(f.root().open_group("a/b").children(), (std::vector<std::string>{"big", "c"}));

  h5::DatasetData s = f.root().read_dataset("a/b/c/small");
  EXPECT_EQ(s.shape, (Shape{2, 3}));
  EXPECT_FALSE(s.is_int);
  for (size_t i = 0; i < small.size(); ++i) EXPECT_EQ(s.values[i], double(small[i]));

  h5::DatasetData b = f.root().read_dataset("a/b/big");
  EXPECT_EQ(b.shape, (Shape{10, 100, 100}));
  for (size_t i = 0; i < big.size(); ++i) ASSERT_EQ(b.values[i], double(big[i])) << i;

  h5::DatasetData n = f.root().read_dataset("a/b/c/ints");
  EXPECT_TRUE(n.is_int);
  EXPECT_EQ(n.values, (std::vector<double>{1, 0, -5, 2147483647}));

  EXPECT_EQ(f.root().read_dataset("scalar").shape, Shape{});
  EXPECT_EQ(f.root().read_dataset("scalar").values, std::vector<double>{4});
  EXPECT_EQ(f.root().read_dataset("empty").shape, (Shape{0, 3}));
  EXPECT_THROW(f.root().read_dataset("a/missing"), std::runtime_error);
}

TEST(Hdf5, ErrorsAreOneLineAndNameTheFile) {
  TempDir dir;
  std::string missing = dir.file("no/such/dir/x.h5");
  try {
    h5::File::create(missing);
    FAIL();
  } catch (const std::runtime_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(missing), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  std::ofstream(dir.file("text.h5")) << "not hdf5\n";
  EXPECT_FALSE(h5::File::is_hdf5(dir.file("text.h5")));
  EXPECT_FALSE(h5::File::is_hdf5(dir.file("absent.h5")));
  try {
    h5::File::open_read(dir.file("text.h5"));
    FAIL();
  } catch (const std::runtime_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("text.h5"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST(Hdf5, ReadOnlyFileRefusesWrites) {
  TempDir dir;
  std::string path = dir.file("ro.h5");
  h5::File::create(path).close();
  h5::File f = h5::File::open_read(path);
  EXPECT_THROW(f.root().set_attr("x", int64_t(1)), std::runtime_error);
  EXPECT_THROW(f.root().create_group("g"), std::runtime_error);
}

TEST(Hdf5, MoveOnlyHandles) {
  static_assert(!std::is_copy_constructible_v<h5::File>);
  static_assert(!std::is_copy_constructible_v<h5::Group>);
  static_assert(std::is_nothrow_move_constructible_v<h5::Handle>);
  TempDir dir;
  h5::File a = h5::File::create(dir.file("m.h5"));
  h5::File b = std::move(a);
  EXPECT_FALSE(a.is_open());
  EXPECT_TRUE(b.is_open());
  b.root().set_attr("k", int64_t(2));
  b.close();
  EXPECT_EQ(h5::File::open_read(dir.file("m.h5")).root().attr_int("k"), 2);
}
