// lmscope-bench --roofline on the CPU: the bytes a decode step reads are the weights as held,
// counted here independently from the GGUF file's own tensor table (every tensor's bytes once,
// the embedding table only for the rows gathered, and again in full when the head is tied to
// it), and the roofline is the measured read bandwidth over those bytes.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/gguf.h"
#include "tests/test_util.h"

namespace {

const std::string kBin = LMSCOPE_BINARY_DIR;
const std::string kSmolLM2 = std::string(LMSCOPE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";

TEST(BenchRoofline, CpuCountsTheWeightsAsHeld) {
  if (!std::filesystem::exists(kSmolLM2)) GTEST_SKIP() << kSmolLM2 << " is absent (scripts/fetch-model.sh fetches it)";
  const lmscope::GgufFile f = lmscope::GgufFile::open(kSmolLM2);
  double all = 0, embed = 0, embed_rows = 0;
  bool tied = true;
  for (const lmscope::GgufTensorInfo& t : f.tensors()) {
    all += double(t.nbytes);
    if (t.name == "token_embd.weight") embed = double(t.nbytes), embed_rows = double(t.shape()[0]);
    if (t.name == "output.weight") tied = false;
  }
  ASSERT_GT(embed, 0);
  const int batch = 2;
  const double expected = all - embed + embed / embed_rows * batch + (tied ? embed : 0);

  lmscope::testing_util::TempDir tmp;
  const std::string json = tmp.file("bench.json");
  const lmscope::testing_util::CliRun r =
      lmscope::testing_util::run_cli("OMP_NUM_THREADS=1 " + kBin + "/lmscope-bench --model " + kSmolLM2 +
                             " --batch 2 --prompt-len 4 --decode 2 --repeats 1 --configs none --roofline --json " + json);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("host read bandwidth (1 thread)"), std::string::npos) << r.out;
  const nlohmann::json roof = nlohmann::json::parse(lmscope::testing_util::read_text(json))["roofline"];
  EXPECT_EQ(roof["weight_bytes_per_step"].get<double>(), expected);
  EXPECT_EQ(roof["threads"].get<int>(), 1);
  // One core streams memory at gigabytes a second on any machine this runs on; the roofline
  // is batch rows per step at that rate.
  const double bw = roof["read_bytes_per_s"].get<double>();
  EXPECT_GT(bw, 1e9);
  EXPECT_NEAR(roof["roofline_tok_s"].get<double>(), batch * bw / roof["bytes_per_step"].get<double>(), 1e-9 * bw);
  EXPECT_GT(roof["decode_fraction_of_roofline"].get<double>(), 0.0);
}

}  // namespace
