// Dequantization equals the gguf Python package's, bit for bit, on the committed reference
// blocks (golden/gguf/dequant_refs.json, made by golden/make_gguf_refs.py: real blocks of the
// SmolLM2 file for Q4_1/Q8_0/F32, gguf's quantize or random blocks for the rest).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gguf_test_util.h"
#include "io/gguf.h"
#include "io/gguf_dequant.h"
#include "kernels/dtype_convert.cuh"

using namespace lmscope;

namespace {

nlohmann::json load_refs() {
  const std::string path = std::string(LMSCOPE_SOURCE_DIR) + "/golden/gguf/dequant_refs.json";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

const nlohmann::json& refs() {
  static const nlohmann::json j = load_refs();
  return j;
}

// Number of elements whose bits differ (NaN compared by bits too); reports the first.
size_t count_mismatches(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (ggtest::bits(got[i]) != ggtest::bits(want[i])) {
      if (bad == 0)
        ADD_FAILURE() << what << ": element " << i << " is " << got[i] << " (0x" << std::hex
                      << ggtest::bits(got[i]) << "), gguf gives " << want[i] << " (0x" << ggtest::bits(want[i])
                      << ")" << std::dec;
      ++bad;
    }
  return bad;
}

}  // namespace

TEST(Dequant, BitExactWithGgufPackage) {
  const auto& entries = refs().at("entries");
  ASSERT_GE(entries.size(), 14u);
  for (const auto& e : entries) {
    const std::string what = e.at("type").get<std::string>() + " (" + e.at("source").get<std::string>() + ")";
    SCOPED_TRACE(what);
    const uint32_t type = e.at("type_id");
    const auto raw = ggtest::unhex(e.at("block_bytes"));
    const auto want = ggtest::unhex_f32(e.at("expected_f32"));
    const GgmlTypeInfo* ti = ggml_type_info(type);
    ASSERT_NE(ti, nullptr);
    EXPECT_EQ(ti->name, e.at("type").get<std::string>());
    EXPECT_EQ(ti->block_size, e.at("block_size").get<uint32_t>());
    EXPECT_EQ(ti->type_size, e.at("type_size").get<uint32_t>());
    ASSERT_EQ(raw.size(), e.at("n_blocks").get<size_t>() * ti->type_size);
    ASSERT_EQ(want.size(), e.at("n_blocks").get<size_t>() * ti->block_size);
    std::vector<float> got(want.size(), -12345.0f);
    dequantize_row(type, raw.data(), got.data(), int64_t(got.size()));
    EXPECT_EQ(count_mismatches(got, want, what), 0u);
  }
}

TEST(Dequant, EverySupportedTypeHasReferences) {
  std::set<std::string> seen;
  for (const auto& e : refs().at("entries")) seen.insert(e.at("type").get<std::string>());
  for (uint32_t id = 0; id < 64; ++id) {
    const GgmlTypeInfo* ti = ggml_type_info(id);
    if (!ti) continue;
    EXPECT_EQ(ti->dequantizable, ggml_can_dequantize(id)) << ti->name;
    if (ti->dequantizable) {
      EXPECT_TRUE(seen.count(ti->name)) << ti->name << " has no reference blocks";
    }
  }
  // The list, each dequantizable and covered.
  for (const char* t : {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q6_K", "IQ4_NL"}) {
    bool can = false;
    for (uint32_t id = 0; id < 64; ++id)
      if (const GgmlTypeInfo* ti = ggml_type_info(id); ti && std::string(ti->name) == t) can = ggml_can_dequantize(id);
    EXPECT_TRUE(can && seen.count(t)) << t;
  }
}

// The same blocks read through a GGUF file (1-D tensors), which goes through to_f32.
TEST(Dequant, ThroughGgufFile) {
  testing_util::TempDir d;
  ggtest::Writer w;
  std::map<std::string, std::vector<float>> want;
  int i = 0;
  for (const auto& e : refs().at("entries")) {
    const std::string name = "t" + std::to_string(i++) + "." + e.at("type").get<std::string>();
    const auto raw = ggtest::unhex(e.at("block_bytes"));
    want[name] = ggtest::unhex_f32(e.at("expected_f32"));
    w.tensor({name, {uint64_t(want[name].size())}, e.at("type_id").get<uint32_t>(),
              std::string(raw.begin(), raw.end())});
  }
  const std::string p = d.file("refs.gguf");
  iotest::write_file(p, w.build());
  const GgufFile f = GgufFile::open(p);
  for (const auto& [name, v] : want) {
    Tensor t = f.to_f32(name);
    ASSERT_EQ(t.numel(), int64_t(v.size()));
    EXPECT_EQ(count_mismatches(std::vector<float>(t.f32(), t.f32() + t.numel()), v, name), 0u);
  }
}

// The threaded path over many chunks equals the one-thread path.
TEST(Dequant, ParallelEqualsSerial) {
  std::mt19937 rng(7);
  for (uint32_t type : {3u, 8u, 12u, 14u, 1u}) {
    const GgmlTypeInfo* ti = ggml_type_info(type);
    const int64_t blocks = (int64_t(1) << 21) / ti->block_size + 3;
    std::vector<uint8_t> raw(size_t(blocks) * ti->type_size);
    for (auto& b : raw) b = uint8_t(rng());
    // Finite fp16 scales: clear the exponent's top bit of every 2-byte field (crude but
    // enough; NaN/inf compare by bits anyway).
    for (size_t k = 1; k < raw.size(); k += 2) raw[k] &= 0x3f;
    const int64_t n = blocks * ti->block_size;
    std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    dequantize_row(type, raw.data(), a.data(), n);
    dequantize(type, raw.data(), b.data(), n);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << ti->name;
  }
}

TEST(Dequant, RefusesBadArguments) {
  std::vector<uint8_t> raw(64);
  std::vector<float> out(64);
  EXPECT_THROW(dequantize_row(16, raw.data(), out.data(), 256), std::invalid_argument);  // IQ2_XXS
  EXPECT_THROW(dequantize_row(3, raw.data(), out.data(), 31), std::invalid_argument);    // not whole blocks
  EXPECT_FALSE(ggml_can_dequantize(99));
  EXPECT_EQ(ggml_type_name(99), "type 99");
  EXPECT_NE(ggml_dequantizable_types().find("Q6_K"), std::string::npos);
}
