// The intervention goldens on the CPU backend (the check: intervention_golden.h).
// SmolLM2 cases are skipped, saying why, when scripts/fetch-model.sh has not fetched the model.
#include "intervention_golden.h"

#include <filesystem>

using namespace lmscope;
using namespace lmscope::intervention_golden;

TEST(InterventionsVsHF, TinyQwen2) { check_model("tiny-qwen2", kRoot + "/golden/models/tiny-qwen2", make_backend("cpu")); }

TEST(InterventionsVsHF, TinyLlama) { check_model("tiny-llama", kRoot + "/golden/models/tiny-llama", make_backend("cpu")); }

TEST(InterventionsVsHF, SmolLM2) {
  const json ref = refs("smollm2");
  ASSERT_FALSE(ref.is_null()) << "golden/interventions/smollm2.json is missing: it is committed, so the checkout is broken";
  const std::string model = kRoot + "/" + ref["model"].get<std::string>();
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is missing: run scripts/fetch-model.sh";
  check_model("smollm2", model, make_backend("cpu"));
}
