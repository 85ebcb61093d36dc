// GgufFile: every value type, versions, alignment, and broken files that must give one-line
// errors naming the file and the key or tensor, never a crash.
#include <gtest/gtest.h>

#include <random>

#include "gguf_test_util.h"
#include "io/gguf.h"

using namespace lmscope;
using ggtest::Writer;
using iotest::expect_error;
using testing_util::TempDir;
using iotest::write_file;

namespace {

// A small valid file: a few keys and two F32 tensors whose data ends the file exactly
// (8 floats = 32 bytes each), so every strict prefix of it is broken.
Writer small_file() {
  Writer w;
  w.kv_str("general.architecture", "llama");
  w.kv_u32("llama.block_count", 2);
  w.kv_f32("llama.rope.freq_base", 10000.0f);
  w.kv_str_array("tokenizer.ggml.tokens", {"a", "b", "c"});
  w.tensor_f32("one", {8}, {1, 2, 3, 4, 5, 6, 7, 8});
  w.tensor_f32("two", {4, 2}, {-1, -2, -3, -4, -5, -6, -7, -8});
  return w;
}

std::string written(const TempDir& d, const std::string& bytes, const std::string& name = "m.gguf") {
  const std::string p = d.file(name);
  write_file(p, bytes);
  return p;
}

}  // namespace

TEST(GgufReader, ReadsSmallFile) {
  TempDir d;
  const std::string p = written(d, small_file().build());
  const GgufFile f = GgufFile::open(p);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset() % 32, 0u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_int("llama.block_count"), 2);
  EXPECT_EQ(f.get_uint("llama.block_count"), 2u);
  EXPECT_EQ(f.get_float("llama.rope.freq_base"), 10000.0);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(f.metadata().size(), 4u);
  EXPECT_EQ(f.metadata()[1].key, "llama.block_count");
  ASSERT_EQ(f.tensors().size(), 2u);
  const auto& two = f.tensor_info("two");
  EXPECT_EQ(two.ne, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(two.shape(), (Shape{2, 4}));
  EXPECT_EQ(two.nbytes, 32u);
  Tensor t = f.to_f32("two");
  EXPECT_EQ(t.shape(), (Shape{2, 4}));
  EXPECT_EQ(t.f32()[5], -6.0f);
  EXPECT_TRUE(is_gguf_file(p));
}

TEST(GgufReader, EveryValueTypeAndNestedArrays) {
  Writer w;
  std::string p;
  using namespace ggtest;
  p.clear(); u8(p, 200); w.kv_raw("k.u8", U8, p);
  p.clear(); u8(p, uint8_t(-5)); w.kv_raw("k.i8", I8, p);
  p.clear(); { uint16_t v = 60000; put(p, &v, 2); } w.kv_raw("k.u16", U16, p);
  p.clear(); { int16_t v = -30000; put(p, &v, 2); } w.kv_raw("k.i16", I16, p);
  w.kv_u32("k.u32", 4000000000u);
  w.kv_i32("k.i32", -2000000000);
  w.kv_f32("k.f32", 1e-5f);
  w.kv_bool("k.bool", true);
  w.kv_str("k.str", "h\xc3\xa9llo");
  w.kv_u64("k.u64", 1ull << 60);
  p.clear(); { int64_t v = -(1ll << 60); put(p, &v, 8); } w.kv_raw("k.i64", I64, p);
  p.clear(); { double v = 0.1; put(p, &v, 8); } w.kv_raw("k.f64", F64, p);
  // array of 2 arrays of uint16: [[1,2,3],[]]
  p.clear();
  u32(p, ARRAY); u64(p, 2);
  u32(p, U16); u64(p, 3); for (uint16_t v : {1, 2, 3}) put(p, &v, 2);
  u32(p, U16); u64(p, 0);
  w.kv_raw("k.nested", ARRAY, p);
  w.kv_i32_array("k.i32s", {3, -1, 7});
  p.clear(); u32(p, F32); u64(p, 2); f32(p, 0.5f); f32(p, -2.0f); w.kv_raw("k.f32s", ARRAY, p);
  TempDir d;
  const GgufFile f = GgufFile::open(written(d, w.build()));
  EXPECT_EQ(f.value("k.u8").type(), GgufType::U8);
  EXPECT_EQ(f.get_int("k.u8"), 200);
  EXPECT_EQ(f.get_int("k.i8"), -5);
  EXPECT_EQ(f.get_int("k.u16"), 60000);
  EXPECT_EQ(f.get_int("k.i16"), -30000);
  EXPECT_EQ(f.get_uint("k.u32"), 4000000000u);
  EXPECT_EQ(f.get_int("k.i32"), -2000000000);
  EXPECT_EQ(f.get_float("k.f32"), double(1e-5f));
  EXPECT_TRUE(f.get_bool("k.bool"));
  EXPECT_EQ(f.get_string("k.str"), "h\xc3\xa9llo");
  EXPECT_EQ(f.get_uint("k.u64"), 1ull << 60);
  EXPECT_EQ(f.get_int("k.i64"), -(1ll << 60));
  EXPECT_EQ(f.get_float("k.f64"), 0.1);
  const GgufArray& outer = f.value("k.nested").as_array();
  EXPECT_EQ(outer.elem_type, GgufType::Array);
  ASSERT_EQ(outer.size(), 2u);
  EXPECT_EQ(outer.at(0).as_array().elem_type, GgufType::U16);
  EXPECT_EQ(outer.at(0).as_array().at(2).as_uint(), 3u);
  EXPECT_EQ(outer.at(1).as_array().size(), 0u);
  EXPECT_EQ(f.get_int_array("k.i32s"), (std::vector<int64_t>{3, -1, 7}));
  EXPECT_EQ(f.get_float_array("k.f32s"), (std::vector<double>{0.5, -2.0}));
  EXPECT_EQ(f.value("k.nested").describe(), "[array x 2]");
  EXPECT_EQ(f.get_int("absent", 7), 7);
  EXPECT_EQ(f.get_string("absent", "x"), "x");
  EXPECT_TRUE(f.tensors().empty());
}

TEST(GgufReader, GetterErrorsNameTheKey) {
  TempDir d;
  const std::string p = written(d, small_file().build());
  const GgufFile f = GgufFile::open(p);
  expect_error([&] { f.get_int("general.architecture"); }, p, {"general.architecture", "integer", "string"});
  expect_error([&] { f.get_string("nope"); }, p, {"'nope'", "missing"});
  expect_error([&] { f.get_int_array("tokenizer.ggml.tokens"); }, p, {"tokenizer.ggml.tokens", "array of string"});
  expect_error([&] { f.get_float("llama.block_count"); }, p, {"llama.block_count", "uint32"});
  expect_error([&] { f.get_bool("llama.block_count", false); }, p, {"llama.block_count"});
  expect_error([&] { f.tensor_info("three"); }, p, {"'three'", "not in this file"});
}

TEST(GgufReader, VersionTwoAcceptedOneAndFourRefused) {
  TempDir d;
  Writer w = small_file();
  w.version = 2;
  EXPECT_EQ(GgufFile::open(written(d, w.build())).version(), 2u);
  w.version = 1;
  std::string p = written(d, w.build());
  expect_error([&] { GgufFile::open(p); }, p, {"version 1 is not supported"});
  w.version = 4;
  p = written(d, w.build());
  expect_error([&] { GgufFile::open(p); }, p, {"version 4 is not supported"});
  w.version = 0x03000000;  // a big-endian file read as little-endian
  p = written(d, w.build());
  expect_error([&] { GgufFile::open(p); }, p, {"big-endian"});
}

TEST(GgufReader, BadMagic) {
  TempDir d;
  Writer w = small_file();
  w.magic = "GGML";
  const std::string p = written(d, w.build());
  expect_error([&] { GgufFile::open(p); }, p, {"bad magic", "not a GGUF file"});
  EXPECT_FALSE(is_gguf_file(p));
  const std::string e = written(d, "", "empty.gguf");
  expect_error([&] { GgufFile::open(e); }, e, {"truncated"});
}

TEST(GgufReader, EveryTruncationIsAOneLineError) {
  TempDir d;
  const std::string full = small_file().build();
  const std::string p = d.file("cut.gguf");
  for (size_t n = 0; n < full.size(); ++n) {
    write_file(p, full.substr(0, n));
    SCOPED_TRACE("prefix of " + std::to_string(n) + " bytes");
    expect_error([&] { GgufFile::open(p); }, p, {});
  }
  write_file(p, full);
  EXPECT_NO_THROW(GgufFile::open(p));
  // Cut inside the metadata: the message names the key being read.
  const size_t at = full.find("tokenizer.ggml.tokens") + 30;
  write_file(p, full.substr(0, at));
  expect_error([&] { GgufFile::open(p); }, p, {"truncated", "tokenizer.ggml.tokens"});
  // Cut inside the data: the message names the tensor.
  write_file(p, full.substr(0, full.size() - 4));
  expect_error([&] { GgufFile::open(p); }, p, {"tensor 'two'", "past the end of the file", "truncated"});
}

TEST(GgufReader, ImpossibleCounts) {
  TempDir d;
  Writer w = small_file();
  w.tensor_count = int64_t(1) << 40;
  std::string p = written(d, w.build());
  expect_error([&] { GgufFile::open(p); }, p, {"impossible tensor count 1099511627776"});
  w.tensor_count = -1;
  w.kv_count = 1000000;
  p = written(d, w.build());
  expect_error([&] { GgufFile::open(p); }, p, {"impossible metadata count 1000000"});
}

TEST(GgufReader, TensorPastTheEnd) {
  TempDir d;
  Writer w = small_file();
  w.tensor({"far", {8}, 0, "", 1 << 20});
  const std::string p = written(d, w.build());
  expect_error([&] { GgufFile::open(p); }, p, {"tensor 'far'", "runs past the end of the file"});
}

TEST(GgufReader, UnknownValueTypes) {
  TempDir d;
  Writer w;
  w.kv_str("general.architecture", "llama");
  w.kv_raw("weird.key", 13, std::string(8, '\0'));
  std::string p = written(d, w.build());
  expect_error([&] { GgufFile::open(p); }, p, {"key 'weird.key'", "unknown value type 13"});
  Writer a;
  std::string payload;
  ggtest::u32(payload, 77);
  ggtest::u64(payload, 1);
  payload += std::string(8, '\0');
  a.kv_raw("weird.array", ggtest::ARRAY, payload);
  p = written(d, a.build());
  expect_error([&] { GgufFile::open(p); }, p, {"key 'weird.array'", "unknown array element type 77"});
}

TEST(GgufReader, AbsurdArraysAndNesting) {
  TempDir d;
  Writer w;
  std::string payload;
  ggtest::u32(payload, ggtest::U32);
  ggtest::u64(payload, uint64_t(1) << 60);
  w.kv_raw("huge", ggtest::ARRAY, payload + std::string(64, '\0'));
  std::string p = written(d, w.build());
  expect_error([&] { GgufFile::open(p); }, p, {"key 'huge'", "cannot fit"});

  Writer n;  // arrays nested 20 deep
  std::string deep;
  for (int i = 0; i < 20; ++i) {
    ggtest::u32(deep, ggtest::ARRAY);
    ggtest::u64(deep, 1);
  }
  ggtest::u32(deep, ggtest::U8);
  ggtest::u64(deep, 0);
  n.kv_raw("deep", ggtest::ARRAY, deep);
  p = written(d, n.build());
  expect_error([&] { GgufFile::open(p); }, p, {"key 'deep'", "nested"});

  Writer b;
  b.kv_raw("flag", ggtest::BOOL, std::string(1, '\x07'));
  p = written(d, b.build());
  expect_error([&] { GgufFile::open(p); }, p, {"key 'flag'", "bool value 7"});
}

TEST(GgufReader, BadTensorInfos) {
  TempDir d;
  auto one = [&](ggtest::Tensor t, std::initializer_list<std::string> parts) {
    Writer w;
    w.tensor(t);
    const std::string p = written(d, w.build());
    SCOPED_TRACE(t.name);
    expect_error([&] { GgufFile::open(p); }, p, parts);
  };
  one({"fivedims", {1, 1, 1, 1, 1}, 0, std::string(4, '\0')}, {"tensor 'fivedims'", "n_dims 5 > 4"});
  one({"huge", {1ull << 40, 1ull << 40}, 0, ""}, {"tensor 'huge'", "overflow"});
  one({"big", {1ull << 30, 1ull << 20}, 0, ""}, {"tensor 'big'", "larger than the whole file"});
  one({"odd", {33}, 3, std::string(40, '\0')}, {"tensor 'odd'", "not a multiple of the Q4_1 block size 32"});
  one({"unknown", {32}, 99, std::string(32, '\0')}, {"tensor 'unknown'", "unknown ggml type 99"});
  one({"removed", {32}, 4, std::string(32, '\0')}, {"tensor 'removed'", "unknown ggml type 4"});
  one({"misaligned", {8}, 0, std::string(32, '\0'), 4}, {"tensor 'misaligned'", "alignment"});
}

TEST(GgufReader, DuplicatesAndOverlap) {
  TempDir d;
  Writer k;
  k.kv_u32("a.b", 1);
  k.kv_u32("a.b", 2);
  std::string p = written(d, k.build());
  expect_error([&] { GgufFile::open(p); }, p, {"key 'a.b' appears twice"});
  Writer t;
  t.tensor_f32("x", {8}, std::vector<float>(8));
  t.tensor_f32("x", {8}, std::vector<float>(8));
  p = written(d, t.build());
  expect_error([&] { GgufFile::open(p); }, p, {"tensor 'x' appears twice"});
  Writer o;
  o.tensor_f32("x", {16}, std::vector<float>(16));
  o.tensor({"y", {8}, 0, "", 32});
  p = written(d, o.build());
  expect_error([&] { GgufFile::open(p); }, p, {"'x'", "'y'", "overlap"});
}

TEST(GgufReader, Alignment) {
  TempDir d;
  Writer w = small_file();
  w.alignment = 64;
  w.kv_u32("general.alignment", 64);
  const GgufFile f = GgufFile::open(written(d, w.build()));
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  EXPECT_EQ(f.to_f32("two").f32()[7], -8.0f);

  Writer bad = small_file();
  bad.kv_u32("general.alignment", 24);
  std::string p = written(d, bad.build());
  expect_error([&] { GgufFile::open(p); }, p, {"general.alignment", "power of two"});
  Writer typed = small_file();
  typed.kv_u64("general.alignment", 32);
  p = written(d, typed.build());
  expect_error([&] { GgufFile::open(p); }, p, {"general.alignment", "uint32", "uint64"});
}

TEST(GgufReader, UnsupportedTypeIsRefusedByName) {
  TempDir d;
  Writer w;
  w.tensor({"iq", {256}, 16, std::string(66, '\0')});  // IQ2_XXS: 66 bytes per 256
  const std::string p = written(d, w.build());
  const GgufFile f = GgufFile::open(p);  // its layout is valid
  EXPECT_EQ(ggml_type_name(f.tensor_info("iq").type), "IQ2_XXS");
  expect_error([&] { f.to_f32("iq"); }, p, {"tensor 'iq'", "IQ2_XXS", "cannot dequantize", "Q4_1"});
}

TEST(GgufReader, NamesWithNewlinesStayOneLine) {
  TempDir d;
  Writer w;
  w.kv_raw("bad\nkey", 13, "");
  const std::string p = written(d, w.build());
  expect_error([&] { GgufFile::open(p); }, p, {"bad?key"});
}

// Random corruption of a valid file: opening and reading every tensor either works or
// throws std::runtime_error; anything else (a crash, another exception) fails the test.
TEST(GgufReader, RandomCorruptionNeverCrashes) {
  TempDir d;
  const std::string full = small_file().build();
  const std::string p = d.file("fuzz.gguf");
  std::mt19937 rng(1234);
  int errors = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s = full;
    const int flips = 1 + int(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      const size_t at = rng() % s.size();
      s[at] = char(rng() % 3 == 0 ? 0xff : rng());
    }
    write_file(p, s);
    try {
      const GgufFile f = GgufFile::open(p);
      for (const auto& t : f.tensors()) (void)f.to_f32(t);
    } catch (const std::runtime_error& e) {
      ++errors;
      ASSERT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      ASSERT_EQ(std::string(e.what()).rfind(p, 0), 0u) << e.what();
    }
  }
  EXPECT_GT(errors, 100);
}

// general.alignment 1 or 2 puts float32 tensors at any address: to_f32 copies such a tensor,
// so every float load is aligned, with the values of the file.
TEST(GgufReader, AlignmentOneOrTwoGivesAlignedFloats) {
  for (uint32_t a : {1u, 2u})
    for (int pad = 0; pad < 4; ++pad) {
      TempDir d;
      Writer w;
      w.alignment = a;
      w.kv_u32("general.alignment", a);
      w.kv_str("pad", std::string(size_t(pad), 'p'));   // moves the data section by a byte
      w.tensor({"h", {1}, 1, std::string(2, '\0')});      // one f16: x starts 2 bytes later
      w.tensor_f32("x", {4}, {1.5f, -2.0f, 3.25f, 7.0f});
      const GgufFile f = GgufFile::open(written(d, w.build()));
      lmscope::Tensor x = f.to_f32("x");
      EXPECT_EQ(reinterpret_cast<uintptr_t>(x.f32()) % alignof(float), 0u) << a << " " << pad;
      EXPECT_EQ(std::vector<float>(x.f32(), x.f32() + 4), (std::vector<float>{1.5f, -2.0f, 3.25f, 7.0f}));
    }
}
