// K-quant dequantization equals gguf-py's (the `gguf` package's dequantize), bit for bit, on
// blocks a real quantizer wrote (golden/make_kquant_refs.py; its doc says how the references
// were made):
//  * the real DeepSeek-R1-Distill-Qwen-7B output.weight, Q6_K: all 31,857 complete rows of
//    the part scripts/fetch-r1-tokenizer.sh fetches (93.7 MB of blocks), checked by the
//    reference's checksums of the float32 bit patterns, per 1,024 rows and in all, and rows
//    0 and 31,856 value by value; skipped with one line when the part is not fetched;
//  * Q4_K, Q5_K and Q6_K super-blocks that llama.cpp's quantizer wrote (ggml_quantize_chunk, the
//    function llama-quantize runs on every tensor: golden/gguf/ggml_quantized_kquants.json).
// Both through the two ways lmscope dequantizes: io/gguf_dequant.h's dequantize (the loader's
// float32 path) and tensor/quant_blocks.h's dequantize_block_rows (a blocks-held weight's rows:
// the embedding lookup, prefill's panels, values_f32).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gguf_test_util.h"
#include "io/gguf.h"
#include "io/gguf_dequant.h"
#include "tensor/quant_blocks.h"
#include "tests/tokenizer/tok_test_util.h"   // SKIP_WITHOUT_FILE

using namespace lmscope;

namespace {

nlohmann::json load_json(const std::string& name) {
  const std::string path = std::string(LMSCOPE_SOURCE_DIR) + "/golden/gguf/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

// make_kquant_refs.py's checksums: sum and (index + 1)-weighted sum of the bit patterns, mod 2^64.
struct Checksum {
  uint64_t sum = 0, weighted = 0;
  void add(const float* v, int64_t n, uint64_t first_index) {
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t b = ggtest::bits(v[i]);
      sum += b;
      weighted += b * (first_index + uint64_t(i) + 1);
    }
  }
};

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

bool block_type_of_id(uint32_t id, BlockType* out) {
  for (BlockType t : {BlockType::Q4_K, BlockType::Q5_K, BlockType::Q6_K})
    if (ggml_type_of(t) == id) return (*out = t), true;
  return false;
}

const std::string kR1 = std::string(LMSCOPE_SOURCE_DIR) + "/models/DeepSeek-R1-Distill-Qwen-7B.Q4_K_M.header.gguf";

}  // namespace

TEST(KQuantRefs, R1OutputWeightRowsMatchGgufPy) {
  SKIP_WITHOUT_FILE(kR1, "scripts/fetch-r1-tokenizer.sh");
  const nlohmann::json ref = load_json("r1_output_q6k.json");
  const GgufFile f = GgufFile::open(kR1, GgufOpen::MetadataOnly);
  const GgufTensorInfo& t = f.tensor_info(ref.at("tensor"));
  ASSERT_EQ(ggml_type_name(t.type), ref.at("type").get<std::string>());
  const int64_t cols = ref.at("cols"), rows = ref.at("rows"), row_bytes = ref.at("row_bytes");
  ASSERT_EQ(t.ne.at(0), cols);
  // The part ends inside the tensor: its rows are read from the file, not through the mapping
  // (tensor_data refuses a tensor that is not whole).
  const uint64_t start = f.data_offset() + t.offset;
  ASSERT_EQ((f.file_size() - start) / uint64_t(row_bytes), uint64_t(rows)) << "complete rows in the part";
  std::vector<uint8_t> bytes(size_t(rows * row_bytes));
  std::ifstream in(kR1, std::ios::binary);
  in.seekg(std::streamoff(start));
  ASSERT_TRUE(in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(bytes.size())));

  QuantBlocks q{BlockType::Q6_K, rows, cols, bytes.data(), nullptr};
  ASSERT_EQ(int64_t(q.row_bytes()), row_bytes);
  const int64_t chunk = ref.at("chunk_rows");
  const auto& chunks = ref.at("chunk_weighted");
  ASSERT_EQ(int64_t(chunks.size()), (rows + chunk - 1) / chunk);
  Checksum all_rows, all_io;
  std::vector<float> y(size_t(chunk * cols)), y_io(size_t(chunk * cols));
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t n = std::min(chunk, rows - r0);
    dequantize_block_rows(q, r0, n, y.data());
    dequantize(t.type, bytes.data() + r0 * row_bytes, y_io.data(), n * cols);
    Checksum c, c_io;
    c.add(y.data(), n * cols, uint64_t(r0 * cols));
    c_io.add(y_io.data(), n * cols, uint64_t(r0 * cols));
    EXPECT_EQ(hex64(c.weighted), chunks[size_t(r0 / chunk)].get<std::string>()) << "dequantize_block_rows, rows from " << r0;
    EXPECT_EQ(hex64(c_io.weighted), chunks[size_t(r0 / chunk)].get<std::string>()) << "dequantize, rows from " << r0;
    all_rows.add(y.data(), n * cols, uint64_t(r0 * cols));
    all_io.add(y_io.data(), n * cols, uint64_t(r0 * cols));
    if (r0 == 0) {
      EXPECT_EQ(ggtest::unhex_f32(ref.at("row_first")), std::vector<float>(y.begin(), y.begin() + cols));
    }
    if (r0 + chunk >= rows) {
      const auto last = y.begin() + (rows - 1 - r0) * cols;
      EXPECT_EQ(ggtest::unhex_f32(ref.at("row_last")), std::vector<float>(last, last + cols));
    }
  }
  for (const Checksum& c : {all_rows, all_io}) {
    EXPECT_EQ(hex64(c.sum), ref.at("checksum").at("sum").get<std::string>());
    EXPECT_EQ(hex64(c.weighted), ref.at("checksum").at("weighted").get<std::string>());
  }
  std::printf("[ measure ] %lld rows of %s (%.1f MB of Q6_K blocks) bit-identical to gguf-py\n",
              static_cast<long long>(rows), kR1.c_str(), double(bytes.size()) / 1e6);
}

TEST(KQuantRefs, LlamaCppQuantizedBlocksMatchGgufPy) {
  const nlohmann::json ref = load_json("ggml_quantized_kquants.json");
  std::set<std::string> seen;
  for (const auto& e : ref.at("entries")) {
    const std::string what = e.at("type").get<std::string>() + " (" + e.at("source").get<std::string>() + ")";
    SCOPED_TRACE(what);
    const uint32_t id = e.at("type_id");
    BlockType type;
    ASSERT_TRUE(block_type_of_id(id, &type));
    const auto raw = ggtest::unhex(e.at("block_bytes"));
    const auto want = ggtest::unhex_f32(e.at("expected_f32"));
    const int64_t n = e.at("n_blocks");
    ASSERT_EQ(raw.size(), size_t(n) * block_bytes(type));
    ASSERT_EQ(want.size(), size_t(n * block_elems(type)));
    std::vector<float> io(want.size(), -1.0f), rows(want.size(), -1.0f);
    dequantize_row(id, raw.data(), io.data(), int64_t(io.size()));
    const QuantBlocks q{type, 1, int64_t(want.size()), raw.data(), nullptr};
    dequantize_block_rows(q, 0, 1, rows.data());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(ggtest::bits(io[i]), ggtest::bits(want[i])) << "dequantize, element " << i;
      ASSERT_EQ(ggtest::bits(rows[i]), ggtest::bits(want[i])) << "dequantize_block_rows, element " << i;
    }
    seen.insert(e.at("type").get<std::string>());
  }
  EXPECT_EQ(seen, (std::set<std::string>{"Q4_K", "Q5_K", "Q6_K"}));
}
