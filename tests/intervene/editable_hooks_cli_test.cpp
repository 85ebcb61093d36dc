// Every hook the hook table marks editable (HookInfo::editable, trace/hooks.h) can be edited
// from the command line: lmscope-trace --intervene 'SITE=zero' runs and changes the logits. The
// list is the table's, so a hook made editable is tested here without a new line; the same for
// Python functions and lmscope.Zero: tests/python_module/test_editable_hooks.py.
//
// Each hook is edited in the first committed tiny model that computes it (attn.q_norm and
// attn.k_norm: Qwen3 and Gemma 3; attn_post_norm, ffn_post_norm: Gemma 3 only), at layer 1 of
// 3, on the 11-token prompt of the golden traces.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/cli/cli_test_util.h"
#include "trace/hooks.h"
#include "trace/trace_reader.h"

using namespace lmscope;

namespace {

const std::string kRoot = LMSCOPE_SOURCE_DIR;
const std::string kPrompt = "330,749,537,264,935,314,267,681,289,295,16";
constexpr int kLayer = 1;

// One prefill of `model` traced to `out`: the hooks of `hooks`, the edit `spec` if any.
void trace(const std::string& model, const std::string& hooks, const std::string& spec, const std::string& out) {
  const std::string edit = spec.empty() ? "" : " --intervene '" + spec + "'";
  const auto r = tool("lmscope-trace", "-q --model " + kRoot + "/golden/models/" + model + " --prompt-ids " + kPrompt +
                                           " --max-new-tokens 1 --hooks '" + hooks + "'" + edit + " --out " + out);
  ASSERT_EQ(r.code, 0) << model << edit << "\n" << r.err;
}

// A model's unedited run: which hooks it computes (step 0 of --hooks '*') and its logits.
struct Baseline {
  std::string model;
  std::vector<std::string> hooks;
  std::vector<double> logits;
};

Baseline baseline(const std::string& model, const testing_util::TempDir& tmp) {
  Baseline b{model, {}, {}};
  const std::string out = tmp.file(model + "-clean.h5");
  trace(model, "*", "", out);
  const TraceReader r(out);
  b.hooks = r.hooks(0);
  b.logits = r.read(0, "logits").values;
  return b;
}

// The spec text of hook h at kLayer: "layers.1.attn.scores=zero", "logits=zero".
std::string zero_spec(Hook h) {
  const std::string generic = hook_generic_name(h);
  if (!hook_info(h).per_layer) return generic + "=zero";
  return "layers." + std::to_string(kLayer) + generic.substr(std::string("layers.L").size()) + "=zero";
}

}  // namespace

TEST(EditableHooksCli, EveryEditableHookChangesTheLogits) {
  testing_util::TempDir tmp;
  const std::vector<Baseline> models = {baseline("tiny-qwen2", tmp), baseline("tiny-qwen3", tmp),
                                        baseline("tiny-gemma3", tmp)};
  ASSERT_GE(editable_hooks().size(), 23u) << "the table lost editable hooks";
  for (Hook h : editable_hooks()) {
    const std::string name = hook_name(h, hook_info(h).per_layer ? kLayer : -1);
    const Baseline* in = nullptr;
    for (const Baseline& b : models)
      if (!in && std::find(b.hooks.begin(), b.hooks.end(), name) != b.hooks.end()) in = &b;
    if (!in) {
      ADD_FAILURE() << name << " is editable but no committed tiny model computes it";
      continue;
    }
    const std::string spec = zero_spec(h), out = tmp.file("edited.h5");
    trace(in->model, "logits", spec, out);
    const std::vector<double> edited = TraceReader(out).read(0, "logits").values;
    ASSERT_EQ(edited.size(), in->logits.size()) << spec;
    double largest = 0;
    for (size_t i = 0; i < edited.size(); ++i) largest = std::max(largest, std::fabs(edited[i] - in->logits[i]));
    // Unedited, two runs agree bit for bit (interventions_cli_test's scale(1)); a zeroed
    // activation of a 3-layer model moves some logit by far more than 1e-3.
    EXPECT_GT(largest, 1e-3) << in->model << " " << spec << " did not change the logits";
  }
}

// The grammar's sites are the table's editable hooks, and nothing else.
TEST(EditableHooksCli, ReadOnlyHooksAreRefusedByTheGrammar) {
  for (const HookInfo& info : all_hooks()) {
    if (info.editable) continue;
    const std::string spec = (info.per_layer ? hook_name(info.id, kLayer) : std::string(info.pattern)) + "=zero";
    testing_util::TempDir tmp;
    const auto r = tool("lmscope-trace", "-q --model " + kRoot + "/golden/models/tiny-qwen2 --prompt-ids " + kPrompt +
                                             " --max-new-tokens 1 --intervene '" + spec + "' --out " + tmp.file("x.h5"));
    EXPECT_EQ(r.code, 2) << spec << "\n" << r.err;
    EXPECT_NE(r.err.find("unknown site"), std::string::npos) << spec << " -> " << r.err;
  }
}
