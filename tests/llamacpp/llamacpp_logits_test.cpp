// Our CPU engine against llama.cpp's logits on SmolLM2-135M-Instruct Q4_1: the committed
// reference golden/llamacpp/smollm2-q4_1.h5 (scripts/llamacpp_logits.py; README there), and a
// live llama.cpp run when scripts/build-llamacpp.sh has built it. Every prompt position (one
// prefill) and every greedy decode step (one token per forward) is compared over the whole
// vocabulary.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "tests/golden_manifest.h"
#include "tests/llamacpp/llamacpp_ref.h"
#include "tests/test_util.h"

using namespace lmscope;
using namespace lmscope::llamacpp;
namespace fs = std::filesystem;

namespace {

const std::string kModel = golden::root() + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
const std::string kReference = golden::root() + "/golden/llamacpp/smollm2-q4_1.h5";

void print_rows(const char* what, const std::vector<RowDiff>& d, int64_t prompt_rows) {
  int agree = 0;
  std::string rows;
  for (size_t r = 0; r < d.size(); ++r) {
    agree += d[r].top1_equal;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.3g", r == size_t(prompt_rows) ? " | " : " ", d[r].max_abs);
    rows += buf;
  }
  std::printf("[ measure ] %s: max|dlogit| %.4g, top-1 agrees at %d/%zu positions; per row (prompt | decode):%s\n",
              what, max_over(d), agree, d.size(), rows.c_str());
}

// The checks shared by the committed and the live reference.
void check_against(const Reference& ref, const char* name) {
  const LoadedModel m = load_model(kModel);
  auto exact_backend = make_backend("cpu");
  const std::vector<RowDiff> exact = row_diffs(run_ours(m, *exact_backend, ref), ref.logits);
  print_rows((std::string(name) + ", exact (float32 activations)").c_str(), exact, ref.logits.prompt_rows);
  ASSERT_EQ(exact.size(), ref.input_ids.size() + ref.decode_ids.size());
  for (size_t r = 0; r < exact.size(); ++r) EXPECT_TRUE(exact[r].top1_equal) << "row " << r;
}

}  // namespace

TEST(LlamaCppLogits, CommittedReference) {
  if (!fs::exists(kModel)) GTEST_SKIP() << kModel << " is absent: run scripts/fetch-model.sh (scripts/test.sh does)";
  check_against(read_reference(kReference), "committed");
}

TEST(LlamaCppLogits, LiveLlamaCpp) {
  if (!fs::exists(kModel)) GTEST_SKIP() << kModel << " is absent: run scripts/fetch-model.sh (scripts/test.sh does)";
  const std::string script = golden::root() + "/scripts/llamacpp_logits.py";
  const testing_util::CliRun where = testing_util::run_cli(std::string(LMSCOPE_PYTHON) + " " + script + " --where");
  if (where.code != 0) GTEST_SKIP() << where.err << " (scripts/build-llamacpp.sh builds it)";
  const Reference committed = read_reference(kReference);
  std::string ids;
  for (int32_t id : committed.input_ids) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  testing_util::TempDir tmp;
  const std::string out = tmp.file("live.h5");
  const testing_util::CliRun run = testing_util::run_cli(
      std::string(LMSCOPE_PYTHON) + " " + script + " --gguf " + kModel + " --ids " + ids + " --decode " +
      std::to_string(committed.decode_ids.size()) + " --out " + out);
  ASSERT_EQ(run.code, 0) << run.err;
  const Reference live = read_reference(out);
  EXPECT_EQ(live.decode_ids, committed.decode_ids);
  check_against(live, "live");
}
