// One safetensors file: values read back right, and every malformed layout is refused
// with a one-line error that starts with the file's path.
#include <gtest/gtest.h>

#include "io/safetensors.h"
#include "io_test_util.h"

using namespace iotest;
using lmscope::testing_util::TempDir;
using lmscope::DType;
using lmscope::SafetensorsFile;

namespace {

std::string write(const TempDir& d, const std::string& bytes, const std::string& name = "model.safetensors") {
  const std::string p = d.file(name);
  write_file(p, bytes);
  return p;
}

void expect_open_error(const std::string& bytes, std::initializer_list<std::string> parts) {
  TempDir d;
  const std::string p = write(d, bytes);
  expect_error([&] { SafetensorsFile::open(p); }, p + ": ", parts);
}

std::string one_tensor_header(const std::string& dtype, const std::string& shape, const std::string& offs) {
  return "{\"x\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offs + "}}";
}

}  // namespace

TEST(Safetensors, ReadsF32F16BF16Values) {
  TempDir d;
  // F16: 1.0=0x3C00, -2.0=0xC000, 0.5=0x3800, 65504=0x7BFF.
  // BF16: 1.0=0x3F80, -2.0=0xC000, 0.5=0x3F00, 3.140625=0x4049.
  const std::string p = write(d, build_safetensors(
                                     {{"a.f32", "F32", {2, 3}, f32_bytes({1, -2, 0.5f, 3.25f, 0, -1e-3f})},
                                      {"b.f16", "F16", {4}, u16_bytes({0x3C00, 0xC000, 0x3800, 0x7BFF})},
                                      {"c.bf16", "BF16", {2, 2}, u16_bytes({0x3F80, 0xC000, 0x3F00, 0x4049})}},
                                     "{\"format\":\"pt\"}"));
  const SafetensorsFile f = SafetensorsFile::open(p);
  EXPECT_EQ(f.names(), (std::vector<std::string>{"a.f32", "b.f16", "c.bf16"}));
  EXPECT_TRUE(f.has("b.f16"));
  EXPECT_FALSE(f.has("nope"));
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.info("a.f32").dtype, DType::F32);
  EXPECT_EQ(f.info("a.f32").shape, (lmscope::Shape{2, 3}));
  EXPECT_EQ(f.info("c.bf16").dtype, DType::BF16);

  auto check = [&](const std::string& name, std::vector<float> want) {
    lmscope::Tensor t = f.tensor(name).to_f32();
    ASSERT_EQ(t.numel(), int64_t(want.size())) << name;
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(t.f32()[i], want[i]) << name << "[" << i << "]";
  };
  check("a.f32", {1, -2, 0.5f, 3.25f, 0, -1e-3f});
  check("b.f16", {1, -2, 0.5f, 65504});
  check("c.bf16", {1, -2, 0.5f, 3.140625f});
  EXPECT_EQ(f.tensor("b.f16").dtype(), DType::F16);
}

TEST(Safetensors, ViewOutlivesTheFileObject) {
  TempDir d;
  const std::string p = write(d, build_safetensors({{"w", "F32", {3}, f32_bytes({7, 8, 9})}}));
  lmscope::Tensor t;
  { t = SafetensorsFile::open(p).tensor("w"); }  // the mapping must stay alive through t
  EXPECT_EQ(t.f32()[2], 9.0f);
}

TEST(Safetensors, EmptyTensorsAndEmptyHeaderAreFine) {
  TempDir d;
  const std::string p = write(d, build_safetensors({{"e", "F32", {0, 4}, ""}, {"s", "F32", {}, f32_bytes({5})}}));
  const SafetensorsFile f = SafetensorsFile::open(p);
  EXPECT_EQ(f.tensor("e").numel(), 0);
  EXPECT_EQ(f.tensor("s").to_f32().f32()[0], 5.0f);
  const std::string q = write(d, raw_safetensors("{}", ""), "empty.safetensors");
  EXPECT_TRUE(SafetensorsFile::open(q).names().empty());
}

TEST(Safetensors, MissingFile) {
  TempDir d;
  const std::string p = d.file("absent.safetensors");
  expect_error([&] { SafetensorsFile::open(p); }, p + ": ", {"cannot open"});
}

TEST(Safetensors, ShorterThanEightBytes) { expect_open_error("abc", {"3 bytes", "8-byte header length"}); }

TEST(Safetensors, HeaderLengthPastEndOfFile) {
  std::string bytes = raw_safetensors("{}", "");
  bytes[0] = char(200);  // claims a 200-byte header in a 10-byte file
  expect_open_error(bytes, {"header length 200", "past the end of the file (10 bytes)"});
}

TEST(Safetensors, HeaderNotJson) {
  expect_open_error(raw_safetensors("{\"x\": nope}", ""), {"header is not valid JSON", "parse error"});
}

TEST(Safetensors, HeaderNotAnObject) {
  expect_open_error(raw_safetensors("[1,2]", ""), {"header must be a JSON object, got array"});
}

TEST(Safetensors, UnknownDtypeRefusedAtOpen) {
  expect_open_error(raw_safetensors(one_tensor_header("Q4_0", "[4]", "[0,4]"), std::string(4, '\0')),
                    {"tensor 'x'", "dtype 'Q4_0' is not supported"});
}

TEST(Safetensors, KnownButUnsupportedDtypeRefusedWhenAsked) {
  TempDir d;
  const std::string p = write(d, build_safetensors({{"ok", "F32", {1}, f32_bytes({1})},
                                                    {"dbl", "F64", {2}, std::string(16, '\0')},
                                                    {"ids", "I64", {1}, std::string(8, '\0')}}));
  const SafetensorsFile f = SafetensorsFile::open(p);  // layout is valid, so open succeeds
  EXPECT_TRUE(f.has("dbl"));
  EXPECT_EQ(f.dtype_string("dbl"), "F64");
  EXPECT_EQ(f.tensor("ok").f32()[0], 1.0f);
  expect_error([&] { f.tensor("dbl"); }, p + ": ", {"tensor 'dbl': dtype 'F64' is not supported"});
  expect_error([&] { f.info("ids"); }, p + ": ", {"tensor 'ids': dtype 'I64' is not supported"});
}

TEST(Safetensors, ByteSizeDisagreesWithShape) {
  expect_open_error(raw_safetensors(one_tensor_header("F32", "[4,4]", "[0,60]"), std::string(60, '\0')),
                    {"tensor 'x'", "shape [4,4] F32 needs 64 bytes, data_offsets give 60"});
}

TEST(Safetensors, OverlappingTensors) {
  const std::string h =
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}";
  expect_open_error(raw_safetensors(h, std::string(24, '\0')), {"'a' [0,16]", "'b' [8,24]", "overlap"});
}

TEST(Safetensors, OffsetsPastTheEnd) {
  expect_open_error(raw_safetensors(one_tensor_header("F32", "[4]", "[16,32]"), std::string(20, '\0')),
                    {"tensor 'x'", "data_offsets [16,32]", "past the data section (20 bytes)"});
}

TEST(Safetensors, TruncatedInTheMiddleOfTheData) {
  std::string good = build_safetensors({f32_tensor("a", {8}), f32_tensor("b", {8})});
  expect_open_error(good.substr(0, good.size() - 20), {"tensor 'b'", "past the data section", "truncated"});
}

TEST(Safetensors, BeginAfterEnd) {
  expect_open_error(raw_safetensors(one_tensor_header("F32", "[0]", "[8,4]"), std::string(8, '\0')),
                    {"tensor 'x'", "data_offsets [8,4] has begin after end"});
}

TEST(Safetensors, BadShapeAndOffsetTypes) {
  expect_open_error(raw_safetensors(one_tensor_header("F32", "[-1]", "[0,4]"), std::string(4, '\0')),
                    {"tensor 'x'", "shape", "non-negative integer, got -1"});
  expect_open_error(raw_safetensors(one_tensor_header("F32", "\"4\"", "[0,4]"), std::string(4, '\0')),
                    {"tensor 'x'", "field 'shape' must be an array, got string"});
  expect_open_error(raw_safetensors(one_tensor_header("F32", "[1]", "[0]"), std::string(4, '\0')),
                    {"tensor 'x'", "field 'data_offsets' must be [begin, end]"});
  expect_open_error(raw_safetensors("{\"x\":{\"shape\":[1],\"data_offsets\":[0,4]}}", std::string(4, '\0')),
                    {"tensor 'x'", "field 'dtype' is missing"});
  expect_open_error(raw_safetensors(one_tensor_header("F32", "[4294967296,4294967296]", "[0,4]"),
                                    std::string(4, '\0')),
                    {"tensor 'x'", "too large"});
}

TEST(Safetensors, MetadataMustBeStrings) {
  expect_open_error(raw_safetensors("{\"__metadata__\":{\"n\":1}}", ""), {"'__metadata__' entry 'n' must be a string"});
}

TEST(Safetensors, AskingForAnAbsentName) {
  TempDir d;
  const std::string p = write(d, build_safetensors({f32_tensor("a", {2})}));
  const SafetensorsFile f = SafetensorsFile::open(p);
  expect_error([&] { f.tensor("b"); }, p + ": ", {"tensor 'b' is not in this file"});
}

// A header length that is not a multiple of 4 or 8 (the format does not require one) puts the
// data at any address: such a tensor is copied, so every float load is aligned, with the values
// of the file.
TEST(Safetensors, MisalignedDataIsCopiedAligned) {
  for (size_t pad : {1, 2, 3, 5}) {
    TempDir d;
    const std::string f32 = f32_bytes({1.5f, -2.0f, 3.25f}), bf16 = u16_bytes({0x3F80, 0xC000});   // bf16: 1, -2
    std::string h = "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},"
                    "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[13,17]}}";
    while ((8 + h.size()) % 8 != pad) h += ' ';
    const std::string p = write(d, raw_safetensors(h, f32 + "x" + bf16));
    SafetensorsFile f = SafetensorsFile::open(p);
    lmscope::Tensor a = f.tensor("a"), b = f.tensor("b");
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.f32()) % alignof(float), 0u) << "pad " << pad;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.raw()) % alignof(uint16_t), 0u) << "pad " << pad;
    EXPECT_EQ(std::vector<float>(a.f32(), a.f32() + 3), (std::vector<float>{1.5f, -2.0f, 3.25f}));
    lmscope::Tensor bf = b.to_f32();
    EXPECT_EQ(std::vector<float>(bf.f32(), bf.f32() + 2), (std::vector<float>{1.0f, -2.0f}));
  }
}

// A value nested 100,000 deep in the header is described in one line (the description stops
// after 60 characters instead of recursing through the whole value).
TEST(Safetensors, DeeplyNestedHeaderValue) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  expect_open_error(raw_safetensors("{\"x\":{\"dtype\":\"F32\",\"shape\":" + deep + ",\"data_offsets\":[0,0]}}", ""),
                    {"'x'", "shape"});
}
