// Hostile trace files, built here with the HDF5 C API: every one must end in a one-line
// error naming the file, never an overflow, a huge allocation or endless recursion.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

#include "io/hdf5.h"
#include "tests/test_util.h"
#include "trace/trace_reader.h"

using namespace lmscope;
using namespace lmscope::testing_util;

namespace {

void check(herr_t r, const char* what) {
  if (r < 0) throw std::runtime_error(std::string("test setup: ") + what);
}

void vlen_string_attr(hid_t obj, const char* key, const std::vector<std::string>& values, bool scalar) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  hsize_t n = values.size();
  hid_t sp = scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr);
  hid_t a = H5Acreate2(obj, key, t, sp, H5P_DEFAULT, H5P_DEFAULT);
  std::vector<const char*> ptrs;
  for (const std::string& v : values) ptrs.push_back(v.c_str());
  check(H5Awrite(a, t, ptrs.data()), key);
  H5Aclose(a);
  H5Sclose(sp);
  H5Tclose(t);
}

void fixed_string_array_attr(hid_t obj, const char* key, size_t len, const std::vector<std::string>& values) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, len);
  hsize_t n = values.size();
  hid_t sp = H5Screate_simple(1, &n, nullptr);
  hid_t a = H5Acreate2(obj, key, t, sp, H5P_DEFAULT, H5P_DEFAULT);
  std::vector<char> buf(len * values.size(), '\0');
  for (size_t i = 0; i < values.size(); ++i) std::memcpy(buf.data() + i * len, values[i].data(), std::min(len, values[i].size()));
  check(H5Awrite(a, t, buf.data()), key);
  H5Aclose(a);
  H5Sclose(sp);
  H5Tclose(t);
}

void int_attr(hid_t obj, const char* key, int64_t v) {
  hid_t sp = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(obj, key, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
  check(H5Awrite(a, H5T_NATIVE_INT64, &v), key);
  H5Aclose(a);
  H5Sclose(sp);
}

void group(hid_t parent, const char* name) { H5Gclose(H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)); }

// [1,1,4]: B = 1, T = 1, D = 4, a shape the layout check on open accepts for "embed".
void small_dataset(hid_t parent, const char* name, const char* hook) {
  hsize_t n[3] = {1, 1, 4};
  float v[4] = {1, 2, 3, 4};
  hid_t sp = H5Screate_simple(3, n, nullptr);
  hid_t d = H5Dcreate2(parent, name, H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  check(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v), name);
  vlen_string_attr(d, "hook", {hook}, true);
  H5Dclose(d);
  H5Sclose(sp);
}

// A complete trace shell: format, complete = 1, /step_0000 holding "embed"; `edit` adds the
// hostile part.
void write_trace(const std::string& path, const std::function<void(hid_t)>& edit, bool with_format = true) {
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) throw std::runtime_error("test setup: cannot create " + path);
  if (with_format) vlen_string_attr(f, "format", {"lmscope-trace"}, true);
  int_attr(f, "complete", 1);
  group(f, "step_0000");
  hid_t s = H5Gopen2(f, "step_0000", H5P_DEFAULT);
  small_dataset(s, "embed", "embed");
  H5Gclose(s);
  edit(f);
  H5Fclose(f);
}

// The one-line error of `body`, which must throw; empty (a test failure) otherwise.
std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    return m;
  }
  ADD_FAILURE() << "no error";
  return "";
}

void expect_has(const std::string& m, const std::vector<std::string>& parts) {
  for (const std::string& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' not in: " << m;
}

}  // namespace

TEST(TraceHostile, FormatIsAnArrayOfVariableLengthStrings) {
  // H5Aread on a string array writes one char* per element: reading it into one is a stack overflow.
  TempDir dir;
  std::string p = dir.file("vlen_array.h5");
  write_trace(p, [](hid_t f) { vlen_string_attr(f, "format", {"lmscope-trace", "x", "y"}, false); }, false);
  std::string m = error_of([&] { TraceReader r(p); });
  expect_has(m, {p, "'format'", "not a single string (3 elements)"});
  h5::File f = h5::File::open_read(p);
  expect_has(error_of([&] { f.root().attr_string("format"); }), {p, "format", "3 elements"});
}

TEST(TraceHostile, FormatIsAnArrayOfFixedLengthStrings) {
  TempDir dir;
  std::string p = dir.file("fixed_array.h5");
  write_trace(p, [](hid_t f) { fixed_string_array_attr(f, "format", 16, {"lmscope-trace", "x", "y"}); }, false);
  expect_has(error_of([&] { TraceReader r(p); }), {p, "'format'", "not a single string (3 elements)"});
}

TEST(TraceHostile, OneElementStringArrayIsAString) {
  // h5py writes attrs["x"] = ["text"] this way: one string, readable.
  TempDir dir;
  std::string p = dir.file("one.h5");
  write_trace(p, [](hid_t f) { vlen_string_attr(f, "format", {"lmscope-trace"}, false); }, false);
  TraceReader r(p);
  EXPECT_EQ(r.root_attr_string("format"), "lmscope-trace");
}

TEST(TraceHostile, StepAttributeOfTheWrongShapeOrType) {
  TempDir dir;
  std::string p = dir.file("phase.h5");
  write_trace(p, [](hid_t f) {
    hid_t s = H5Gopen2(f, "step_0000", H5P_DEFAULT);
    vlen_string_attr(s, "phase", {"prefill", "decode"}, false);
    int_attr(s, "T", 1);   // embed's T: the shapes agree, the phase is what is wrong
    H5Gclose(s);
    vlen_string_attr(f, "producer", {"a", "b"}, false);
    int_attr(f, "model_path", 7);   // a number where a string belongs
  });
  TraceReader r(p);
  expect_has(error_of([&] { r.step_info(0); }), {p, "/step_0000", "'phase'", "2 elements"});
  expect_has(error_of([&] { r.root_attr_string("producer"); }), {p, "'producer'", "2 elements"});
  expect_has(error_of([&] { r.root_attr_string("model_path"); }), {p, "'model_path'", "is an integer, not a string"});
  expect_has(error_of([&] { r.root_attrs_json(); }), {p, "2 elements"});
}

TEST(TraceHostile, HugeUnallocatedDatasetIsNotAllocated) {
  // 2^40 float32 with nothing stored: the reader must refuse before allocating 8 TB of doubles.
  TempDir dir;
  std::string p = dir.file("huge.h5");
  write_trace(p, [](hid_t f) {
    hsize_t dims[3] = {1, 1, hsize_t(1) << 40};   // B and T as embed's: a V of 2^40
    hid_t sp = H5Screate_simple(3, dims, nullptr);
    hid_t d = H5Dcreate2(f, "step_0000/logits", H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    vlen_string_attr(d, "hook", {"logits"}, true);
    H5Dclose(d);
    // the same, chunked and "compressed": no chunk was ever written
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t chunk[2] = {1, 1 << 20};
    H5Pset_chunk(dcpl, 2, chunk);
    H5Pset_deflate(dcpl, 4);
    H5Sclose(sp);
    hsize_t gen_dims[2] = {1, hsize_t(1) << 40};
    sp = H5Screate_simple(2, gen_dims, nullptr);
    d = H5Dcreate2(f, "generated_ids", H5T_STD_I32LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(sp);
  });
  TraceReader r(p);
  EXPECT_EQ(r.hooks(0), (std::vector<std::string>{"embed", "logits"}));
  expect_has(error_of([&] { r.read(0, "logits"); }),
             {p, "/step_0000/logits", "[1,1,1099511627776]", "needs 4398046511104 bytes but the file stores 0"});
  expect_has(error_of([&] { r.generated_ids(); }), {p, "/generated_ids", "stores 0 (compressed)"});
  EXPECT_EQ(r.read(0, "embed").values, (std::vector<double>{1, 2, 3, 4}));
}

TEST(TraceHostile, DatasetOfStringsOrANullSpaceIsNotNumeric) {
  TempDir dir;
  std::string p = dir.file("strings.h5");
  write_trace(p, [](hid_t f) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 8);
    hsize_t n[3] = {1, 1, 3};
    hid_t sp = H5Screate_simple(3, n, nullptr);
    hid_t d = H5Dcreate2(f, "step_0000/logits", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(d);
    H5Sclose(sp);
    H5Tclose(t);
    sp = H5Screate(H5S_NULL);
    d = H5Dcreate2(f, "step_0000/null", H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(d);
    H5Sclose(sp);
  });
  TraceReader r(p);
  expect_has(error_of([&] { r.read(0, "logits"); }), {p, "/step_0000/logits", "is a string dataset, not numeric"});
  expect_has(error_of([&] { r.read(0, "null"); }), {p, "/step_0000/null", "null dataspace"});
}

TEST(TraceHostile, CompressedZerosStillRead) {
  // The bound on a filtered dataset (its stored bytes x 1100) must not refuse the best
  // ratio deflate really reaches: 4 MiB of zeros.
  TempDir dir;
  std::string p = dir.file("zeros.h5");
  {
    h5::File f = h5::File::create(p);
    std::vector<float> zeros(1 << 20, 0.f);
    f.root().write_dataset("z", {int64_t(zeros.size())}, zeros.data(), 9);
    f.close();
  }
  h5::File f = h5::File::open_read(p);
  EXPECT_EQ(f.root().read_dataset("z").values.size(), size_t(1) << 20);
}

TEST(TraceHostile, HardLinkCycleUpToTheStep) {
  TempDir dir;
  std::string p = dir.file("hard_cycle.h5");
  write_trace(p, [](hid_t f) {
    group(f, "step_0000/layers");
    group(f, "step_0000/layers/0");
    check(H5Lcreate_hard(f, "/step_0000", f, "/step_0000/layers/0/up", H5P_DEFAULT, H5P_DEFAULT), "hard link");
  });
  expect_has(error_of([&] { TraceReader r(p); }), {p, "/step_0000/layers/0/up", "link cycle"});
}

TEST(TraceHostile, SoftLinkCycleUpToAnAncestor) {
  TempDir dir;
  std::string p = dir.file("soft_cycle.h5");
  write_trace(p, [](hid_t f) {
    group(f, "step_0000/layers");
    check(H5Lcreate_soft("/step_0000/layers", f, "/step_0000/layers/again", H5P_DEFAULT, H5P_DEFAULT), "soft link");
  });
  expect_has(error_of([&] { TraceReader r(p); }), {p, "/step_0000/layers/again", "link cycle"});
}

TEST(TraceHostile, DeeplyNestedGroupsAreRefused) {
  TempDir dir;
  std::string p = dir.file("deep.h5");
  write_trace(p, [](hid_t f) {
    std::string path = "step_0000";
    for (int i = 0; i < 40; ++i) {
      path += "/g";
      group(f, path.c_str());
    }
  });
  expect_has(error_of([&] { TraceReader r(p); }), {p, "nested more than 32 levels"});
}

TEST(TraceHostile, StepNumberFarBeyondTheGroupsPresent) {
  // step_999999999 must not size the step table to a billion entries.
  TempDir dir;
  std::string p = dir.file("far.h5");
  write_trace(p, [](hid_t f) { group(f, "step_999999999"); });
  expect_has(error_of([&] { TraceReader r(p); }),
             {p, "has step_999999999 but only 2 step groups (steps must be numbered 0..1)"});
}

TEST(TraceHostile, TwoGroupsForOneStep) {
  TempDir dir;
  std::string p = dir.file("dup.h5");
  write_trace(p, [](hid_t f) { group(f, "step_0"); });
  expect_has(error_of([&] { TraceReader r(p); }), {p, "two groups for step 0"});
}

TEST(TraceHostile, DiffOnAHostileFileIsOneLineAndExit2) {
  // The CLI path of the first bug: lmscope-diff opening a file whose format is an array
  // (exit 2: bad input, in lmscope-diff's convention).
  TempDir dir;
  std::string bad = dir.file("bad.h5"), good = dir.file("good.h5");
  write_trace(bad, [](hid_t f) { vlen_string_attr(f, "format", {"lmscope-trace", "x", "y"}, false); }, false);
  write_synthetic_trace(good);
  CliRun r = run_cli(std::string(LMSCOPE_BINARY_DIR) + "/lmscope-diff " + bad + " " + good);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  expect_has(r.err, {"lmscope-diff: error:", bad, "'format'", "not a single string"});
}

namespace {

// Replaces /step_0000/embed of a synthetic trace (B=2, T=4, D=8) by what `make` creates
// there, then copies the hook and axes attributes onto it unless it set them.
void replace_embed(const std::string& path, const std::function<hid_t(hid_t)>& make, const char* axes = "B,T,D") {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) throw std::runtime_error("test setup: cannot open " + path);
  check(H5Ldelete(f, "step_0000/embed", H5P_DEFAULT), "delete embed");
  hid_t s = H5Gopen2(f, "step_0000", H5P_DEFAULT);
  hid_t d = make(s);
  if (H5Aexists(d, "hook") <= 0) vlen_string_attr(d, "hook", {"embed"}, true);
  if (H5Aexists(d, "axes") <= 0) vlen_string_attr(d, "axes", {axes}, true);
  H5Dclose(d);
  H5Gclose(s);
  H5Fclose(f);
}

hid_t float_dataset(hid_t parent, std::vector<hsize_t> dims) {
  hid_t sp = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
  size_t n = 1;
  for (hsize_t d : dims) n *= d;
  std::vector<float> v(n, 0.5f);
  hid_t d = H5Dcreate2(parent, "embed", H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  check(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), "embed");
  H5Sclose(sp);
  return d;
}

CliRun diff(const std::string& a, const std::string& b, const std::string& flags) {
  return run_cli(std::string(LMSCOPE_BINARY_DIR) + "/lmscope-diff " + a + " " + b + " " + flags);
}

// lmscope-diff A REF with each of `flags`: exit 2 (bad input) and one line holding `what`.
void expect_diff_refuses(const std::string& a, const std::string& ref, std::initializer_list<const char*> flags,
                         const std::string& what) {
  for (const char* f : flags) {
    CliRun d = diff(a, ref, f);
    EXPECT_EQ(d.code, 2) << f << ": " << d.err;
    EXPECT_EQ(std::count(d.err.begin(), d.err.end(), '\n'), 1) << d.err;
    expect_has(d.err, {"lmscope-diff: error:", what});
  }
}

// Two identical synthetic traces: `a` to damage, `ref` to diff it against.
struct TwoTraces {
  TempDir dir;
  const std::string a = dir.file("a.h5"), ref = dir.file("ref.h5");
  TwoTraces() {
    write_synthetic_trace(a);
    write_synthetic_trace(ref);
  }
};

}  // namespace

// Axis names index the shape (row selection, last positions): a name list longer or shorter
// than the rank is refused when the hook is read.
TEST(TraceHostile, AxesThatDoNotMatchTheRank) {
  TwoTraces t;
  const std::string &a = t.a, &ref = t.ref;
  replace_embed(a, [](hid_t s) { return float_dataset(s, {2, 4, 8}); }, "B");
  expect_has(error_of([&] { TraceReader(a).read(0, "embed"); }),
             {a, "step_0000 embed: axes 'B' name 1 axes but the dataset has 3"});
  expect_diff_refuses(a, ref, {"--last-position", "--row 0", "--row 1 --last-position", ""}, "axes 'B' name 1 axes");
  replace_embed(a, [](hid_t s) { return float_dataset(s, {2, 4, 8}); }, "B,T,D,X,Y");
  expect_has(error_of([&] { TraceReader(a).read(0, "embed"); }), {"name 5 axes but the dataset has 3"});
}

TEST(TraceHostile, NullDataspaceWithRowOrLastPosition) {
  TwoTraces t;
  const std::string &a = t.a, &ref = t.ref;
  replace_embed(a, [](hid_t s) {
    hid_t sp = H5Screate(H5S_NULL);
    hid_t d = H5Dcreate2(s, "embed", H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Sclose(sp);
    return d;
  });
  expect_diff_refuses(a, ref, {"--last-position", "--row 0", "--row 1", "--json"}, "null dataspace");
}

// A hook attribute is echoed into --json: bytes that are not UTF-8 become U+FFFD there.
TEST(TraceHostile, NonUtf8HookAttributeWithJson) {
  TwoTraces t;
  const std::string &a = t.a, &ref = t.ref;
  replace_embed(a, [](hid_t s) {
    hid_t d = float_dataset(s, {2, 4, 8});
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 6);
    H5Tset_cset(t, H5T_CSET_UTF8);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t at = H5Acreate2(d, "hook", t, sp, H5P_DEFAULT, H5P_DEFAULT);
    check(H5Awrite(at, t, "em\xff" "bed"), "hook");
    H5Aclose(at);
    H5Sclose(sp);
    H5Tclose(t);
    return d;
  });
  CliRun d = diff(a, ref, "--json");
  EXPECT_EQ(d.code, 1) << d.err;   // embed is missing in A; the odd name is only in A
  EXPECT_TRUE(d.err.empty()) << d.err;
  nlohmann::json j = nlohmann::json::parse(d.out);   // throws unless the output is valid JSON
  ASSERT_EQ(j["only_in_a"].size(), 1u);
  EXPECT_EQ(j["only_in_a"][0]["hook"], "em\xEF\xBF\xBD" "bed");
  EXPECT_EQ(j["missing_in_a"][0]["hook"], "embed");
}
