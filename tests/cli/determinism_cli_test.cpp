// The same trace whatever runs it: lmscope-trace at 1 and at 2 OpenMP threads must write the
// same bits in every dataset, and a run with every hook the same bits as a run with the
// logits alone in every dataset both hold. On every kernel this processor runs
// (LMSCOPE_CPU_KERNEL: portable, avx2, avx512), float32 on the tiny model (golden/models) and
// float32 and q8 activations on SmolLM2 when it has been fetched. The prompt (40 ids) spans two
// query blocks of the tiled prefill attention; two decode steps follow.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/cpu/kernel_table.h"
#include "cli_test_util.h"
#include "trace/trace_reader.h"

using namespace lmscope;

namespace {

const std::string kTiny = std::string(LMSCOPE_SOURCE_DIR) + "/golden/models/tiny-qwen2";
const std::string kSmolLM2 = std::string(LMSCOPE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";

// Every LMSCOPE_CPU_KERNEL this processor accepts (kernel_table.h).
std::vector<std::string> kernels() {
  std::vector<std::string> k;
  for (const cpu::Isa isa : {cpu::Isa::portable, cpu::Isa::avx2, cpu::Isa::avx512})
    if (cpu::processor_runs(isa)) k.push_back(cpu::isa_name(isa));
  return k;
}

std::string prompt_ids(int vocab) {
  std::string ids;
  for (int i = 0; i < 40; ++i) {
    if (i) ids += ',';
    ids += std::to_string((i * 37 + 11) % vocab);
  }
  return ids;
}

bool same_bits(const HookData& a, const HookData& b) {
  return a.shape == b.shape && a.values.size() == b.values.size() &&
         std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(double)) == 0;
}

// "" when the traces agree bit for bit: every step's hooks (all of them, or with
// shared_only those both hold) and the generated ids; else the first difference.
std::string first_difference(const std::string& a_path, const std::string& b_path, bool shared_only) {
  const TraceReader a(a_path), b(b_path);
  if (a.n_steps() != b.n_steps()) return "step counts differ";
  if (!same_bits(a.generated_ids(), b.generated_ids())) return "generated_ids differ";
  int compared = 0;
  for (int s = 0; s < a.n_steps(); ++s) {
    const std::vector<std::string> ha = a.hooks(s), hb = b.hooks(s);
    if (!shared_only && ha != hb) return "step " + std::to_string(s) + " holds other hooks";
    for (const std::string& h : ha) {
      if (!b.has_hook(s, h)) continue;
      if (!same_bits(a.read(s, h), b.read(s, h))) return "step " + std::to_string(s) + " " + h + " differs";
      ++compared;
    }
  }
  return compared > 0 ? "" : "no dataset in common";
}

struct Setup {
  std::string model, acts, layers;
  int vocab;
};

void check(const Setup& s, const std::string& kernel) {
  testing_util::TempDir tmp;
  auto trace = [&](int threads, const std::string& hooks, const std::string& name) {
    const std::string out = tmp.file(name + ".h5");
    const testing_util::CliRun r = testing_util::run_cli(
        "OMP_NUM_THREADS=" + std::to_string(threads) + " LMSCOPE_CPU_KERNEL=" + kernel + " " + LMSCOPE_BINARY_DIR +
        "/lmscope-trace -q --model " + s.model + " --cpu-activations " + s.acts + " --prompt-ids " +
        prompt_ids(s.vocab) + " --max-new-tokens 2 --hooks '" + hooks + "'" +
        (s.layers.empty() ? "" : " --layers " + s.layers) + " --out " + out);
    EXPECT_EQ(r.code, 0) << r.err;
    return out;
  };
  const std::string what = s.model + " " + s.acts + " kernel " + kernel;
  const std::string one = trace(1, "*", "all-1"), two = trace(2, "*", "all-2"), logits = trace(2, "logits", "logits");
  EXPECT_EQ(first_difference(one, two, false), "") << what << ": 1 against 2 threads";
  EXPECT_EQ(first_difference(logits, one, true), "") << what << ": --hooks logits against '*'";
}

}  // namespace

TEST(Determinism, TinyModelAtAnyThreadCountAndHookSelection) {
  for (const std::string& k : kernels()) check({kTiny, "f32", "", 300}, k);
}

TEST(Determinism, SmolLM2AtAnyThreadCountAndHookSelection) {
  if (!std::filesystem::exists(kSmolLM2)) GTEST_SKIP() << kSmolLM2 << " is absent (scripts/fetch-model.sh fetches it)";
  // Every hook of layers 0 and 29 (the lens logits of all 30 layers would be 240 MB a step).
  for (const std::string& k : kernels())
    for (const char* acts : {"f32", "q8"}) check({kSmolLM2, acts, "0,29", 49152}, k);
}
