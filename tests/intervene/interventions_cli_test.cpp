// Interventions as users run them: lmscope-trace --intervene / --interventions on the committed
// tiny model. Bad input is one line naming what is wrong; an intervened trace records its specs
// (with the sha256 of every file read); lmscope-diff of the clean and the intervened trace names
// the edited hook as the first that departs; a no-op edit (scale(1)) changes nothing, bit for bit.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "io/sha256.h"
#include "tests/cli/cli_test_util.h"
#include "tokenizer/ids_text.h"
#include "trace/trace_reader.h"

using namespace lmscope;

namespace {

const std::string kRoot = LMSCOPE_SOURCE_DIR;
const std::string kTiny = kRoot + "/golden/models/tiny-qwen2";
const std::string kPromptA = "330,749,537,264,935,314,267,681,289,295,16";

std::string trace_args(const std::string& out) {
  return "-q --model " + kTiny + " --prompt-ids " + kPromptA + " --max-new-tokens 3 --hooks '*' --out " + out;
}

// Runs lmscope-trace with `extra` and expects one error line (exit 1 after the model loaded,
// 2 for the grammar) holding `needle`.
void expect_refused(const std::string& extra, const std::string& needle, int code) {
  testing_util::TempDir tmp;
  const auto r = tool("lmscope-trace", trace_args(tmp.file("x.h5")) + " " + extra);
  EXPECT_EQ(r.code, code) << extra << "\n" << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << extra << " -> " << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp.file("x.h5"))) << "a refused run left a trace";
}

}  // namespace

TEST(InterventionsCli, BadSpecsAreOneLine) {
  expect_refused("--intervene 'layers.1.attn.zz=zero'", "unknown site 'layers.1.attn.zz'", 2);
  expect_refused("--intervene 'layers.1.attn.z=ablate'", "unknown op 'ablate'", 2);
  expect_refused("--intervene 'layers.7.attn.z=zero'", "layer 7 is out of range (the model has 3 layers: 0-2)", 1);
  expect_refused("--intervene 'layers.1.attn.z[head=4]=zero'", "head 4 is out of range", 1);
  expect_refused("--intervene 'layers.1.attn.k[head=2]=zero'", "has 2 heads: 0-1", 1);
  expect_refused("--intervene 'layers.1.ffn.act[neuron=176]=zero'", "neuron 176 is out of range", 1);
  expect_refused("--intervene 'layers.1.resid_pre[pos=14]=zero'", "pos 14 is past the run's last position 13", 1);
  expect_refused("--intervene 'layers.1.resid_pre[pos=-12]=zero'", "before the start of a prompt of 11 tokens", 1);
  expect_refused("--intervene 'layers.1.resid_pre[row=1]=zero'", "row 1 is outside the batch of 1", 1);
  expect_refused("--intervene 'layers.1.resid_pre=patch(" + kRoot + "/golden/traces/tiny-llama-a.h5)'",
                 "is a trace of another model", 1);
  expect_refused("--intervene 'layers.1.resid_pre=patch(" + kRoot + "/golden/traces/tiny-qwen2-b.h5)'",
                 "patching needs prompts of equal length", 1);
  expect_refused("--intervene 'layers.1.resid_pre=patch(" + kRoot + "/golden/lens/tiny-qwen2-lens.h5)'",
                 "has no layers.1.resid_pre at step 0", 1);
  expect_refused("--intervene 'layers.1.resid_pre=add(2, " + kRoot + "/golden/interventions/vec-d96.json)'",
                 "holds 96 numbers; layers.{L}.resid_pre takes 64", 1);
  testing_util::TempDir tmp;
  std::ofstream(tmp.file("nan.txt")) << "1 2 nan 4";
  expect_refused("--intervene 'embed=add(1, " + tmp.file("nan.txt") + ")'", "item 2 is not a finite float", 1);
  std::ofstream(tmp.file("iv.json")) << R"([{"site": "embed", "op": "zero", "head": 1}])";
  expect_refused("--interventions " + tmp.file("iv.json"), "selector 'head' does not apply to embed", 2);
}

TEST(InterventionsCli, TraceRecordsTheSpecAndDiffNamesTheEditedHook) {
  testing_util::TempDir tmp;
  const std::string clean = tmp.file("clean.h5"), edited = tmp.file("edited.h5"), noop = tmp.file("noop.h5");
  ASSERT_EQ(tool("lmscope-trace", trace_args(clean)).code, 0);
  const std::string vec = kRoot + "/golden/interventions/vec-d64.json";
  const auto r = tool("lmscope-trace", trace_args(edited) + " --intervene 'layers.1.attn.z[head=2]=zero' --intervene 'layers.2.resid_mid[pos=2:5]=add(3, " + vec + ")'");
  ASSERT_EQ(r.code, 0) << r.err;
  {
    TraceReader t(edited);
    ASSERT_TRUE(t.has_root_attr("interventions"));
    const auto j = nlohmann::json::parse(t.root_attr_string("interventions"));
    ASSERT_EQ(j.size(), 2u);
    EXPECT_EQ(j[0]["spec"], "layers.1.attn.z[head=2]=zero");
    EXPECT_EQ(j[1]["op"], "add");
    EXPECT_EQ(j[1]["vector"]["sha256"], sha256_file(vec));
    // the head is zero in the trace (what o_proj read), the other heads are not
    const HookData z = t.read(0, "layers.1.attn.z");   // [B,T,H,hd]
    double head2 = 0, head1 = 0;
    for (int64_t tt = 0; tt < z.shape[1]; ++tt)
      for (int64_t d = 0; d < z.shape[3]; ++d) {
        head2 += std::fabs(z.values[size_t(((tt * z.shape[2]) + 2) * z.shape[3] + d)]);
        head1 += std::fabs(z.values[size_t(((tt * z.shape[2]) + 1) * z.shape[3] + d)]);
      }
    EXPECT_EQ(head2, 0.0);
    EXPECT_GT(head1, 0.0);
    EXPECT_FALSE(TraceReader(clean).has_root_attr("interventions"));
  }
  const auto d = tool("lmscope-diff", clean + " " + edited);
  EXPECT_EQ(d.code, 1) << d.out;
  EXPECT_NE(d.out.find("intervened: layers.1.attn.z[head=2]=zero"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("first failing hook: step 0 layers.1.attn.z"), std::string::npos) << d.out;
  // the step walker and the report say the trace is a counterfactual
  EXPECT_NE(tool("lmscope-step", edited).out.find("intervened: layers.1.attn.z[head=2]=zero"), std::string::npos);
  ASSERT_EQ(tool("lmscope-report", edited + " --out " + tmp.file("r.html")).code, 0);
  std::ifstream html(tmp.file("r.html"));
  const std::string page((std::istreambuf_iterator<char>(html)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("intervened run"), std::string::npos);
  EXPECT_NE(page.find("layers.1.attn.z[head=2]=zero"), std::string::npos);
  EXPECT_EQ(tool("lmscope-lens", "--model " + kTiny + " --prompt-ids 330,749,537 --intervene 'layers.0.attn.z=zero'").out.rfind("intervened: layers.0.attn.z=zero\n", 0), 0u);

  // scale(1): the edit path runs and changes nothing, bit for bit
  ASSERT_EQ(tool("lmscope-trace", trace_args(noop) + " --intervene 'layers.0.resid_pre=scale(1)' --intervene 'layers.*.attn.z=scale(1)' --intervene 'layers.2.ffn.act=scale(1)'").code, 0);
  std::ofstream(tmp.file("exact.json")) << R"({"*": {"atol": 0, "rtol": 0}})";
  const auto exact = tool("lmscope-diff", clean + " " + noop + " --tolerances " + tmp.file("exact.json"));
  EXPECT_EQ(exact.code, 0) << exact.out;
  // attn.probs edits make z again from the probabilities on the host (another summation
  // order): scale(1) then stays within the tolerances, not bit for bit
  const std::string probs = tmp.file("probs.h5");
  ASSERT_EQ(tool("lmscope-trace", trace_args(probs) + " --intervene 'layers.*.attn.probs=scale(1)'").code, 0);
  const auto near = tool("lmscope-diff", clean + " " + probs);
  EXPECT_EQ(near.code, 0) << near.out;
}

// HF's own trace of SmolLM2 (made from the GGUF: transformers records a quantization_config in
// its config) is a valid source: HF's layer-0 attn_out patched into lmscope's run of the
// same prompt keeps HF's greedy tokens (golden/smollm2/manifest: the trace's generated_ids).
TEST(InterventionsCli, HfsTraceOfTheGgufIsAPatchSource) {
  const std::string model = kRoot + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is absent: run scripts/fetch-model.sh";
  const std::string hf = kRoot + "/golden/smollm2/smollm2-chat-0.h5";
  const TraceReader golden(hf);
  const auto prompt = nlohmann::json::parse(golden.root_attr_string("prompts"))[0].get<std::vector<int32_t>>();
  const HookData hf_ids = golden.generated_ids();   // [B, N], row 0 first
  std::vector<int32_t> first4;
  for (size_t i = 0; i < 4 && i < size_t(hf_ids.shape.at(1)); ++i) first4.push_back(int32_t(hf_ids.values[i]));
  const std::string ids = join_ids(prompt), want = join_ids(first4);
  const auto r = tool("lmscope-trace", "-q --model " + model + " --prompt-ids " + ids +
                                           " --max-new-tokens 4 --intervene 'layers.0.attn_out=patch(" + hf + ")'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("row 0: " + want + "\n"), std::string::npos) << r.out;
}

// lmscope-score --intervene scores a text under the edited forward. Held to HF: for every
// tiny-qwen2 golden case whose edits are local to their positions (no source trace, no mean
// over the run, no step or from-the-end selector), scoring the prompt followed by HF's
// intervened greedy tokens gives, at each generated position, HF's token as the model's own
// top choice (one forward over the whole text is causal: position t sees what step t saw).
// The same texts scored without the edit pick other tokens somewhere: the edit is applied.
TEST(InterventionsCli, ScoreOfAnIntervenedForwardPicksHfsIntervenedTokens) {
  std::ifstream f(kRoot + "/golden/interventions/tiny-qwen2.json");
  ASSERT_TRUE(f) << "golden/interventions/tiny-qwen2.json is missing: it is committed";
  const nlohmann::json ref = nlohmann::json::parse(f);
  // The model's own choices at positions from..end of each scored row.
  auto top_ids = [&](const nlohmann::json& row, size_t from) {
    std::vector<int32_t> tops;
    for (const nlohmann::json& t : row["tokens"])
      if (t["position"].get<size_t>() >= from) tops.push_back(t["top_id"].get<int32_t>());
    return tops;
  };
  std::vector<std::string> texts;
  std::vector<std::pair<size_t, std::vector<int32_t>>> expected;   // per text: prompt length, HF's tokens
  for (const nlohmann::json& c : ref["cases"]) {
    if (c["use_cache"].get<bool>() || c["prompt_ids"].size() != 1) continue;
    std::string args;
    bool local = true;
    for (const nlohmann::json& s : c["interventions"]) {
      std::string spec = s.get<std::string>();
      for (const char* global : {"patch(", "mean", " - ", "step=", "pos=-", ".h5"})
        if (spec.find(global) != std::string::npos) local = false;
      const size_t g = spec.find("golden/");
      if (g != std::string::npos) spec.insert(g, kRoot + "/");
      args += " --intervene '" + spec + "'";
    }
    if (!local) continue;
    const auto prompt = c["prompt_ids"][0].get<std::vector<int32_t>>();
    const auto generated = c["generated_ids"][0].get<std::vector<int32_t>>();
    std::vector<int32_t> text = prompt;
    text.insert(text.end(), generated.begin(), generated.end());
    texts.push_back(join_ids(text));
    expected.emplace_back(prompt.size(), generated);
    const auto r = tool("lmscope-score", "--json --model " + kTiny + " --ids " + texts.back() + args);
    ASSERT_EQ(r.code, 0) << c["name"] << args << "\n" << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(top_ids(j["rows"][0], prompt.size()), generated) << c["name"] << ": the intervened score's own choices are HF's tokens";
    EXPECT_EQ(j["interventions"].size(), c["interventions"].size()) << c["name"] << ": the JSON names the edits";
  }
  ASSERT_GE(texts.size(), 8u) << "the golden cases local to their positions";
  // The same texts without the edits, as one batch (each row scored as if alone).
  std::string batch;
  for (const std::string& t : texts) batch += " --ids " + t;
  const auto clean = tool("lmscope-score", "--json --model " + kTiny + batch);
  ASSERT_EQ(clean.code, 0) << clean.err;
  const nlohmann::json cj = nlohmann::json::parse(clean.out);
  size_t differs = 0;
  for (size_t i = 0; i < texts.size(); ++i) differs += top_ids(cj["rows"][i], expected[i].first) != expected[i].second;
  EXPECT_GE(differs, texts.size() / 2) << "most edits change the greedy tokens; else this test proves little";
  std::printf("[ measure ] %zu intervened scores hold HF's tokens; %zu of them differ from the clean score's\n",
              texts.size(), differs);
}

TEST(InterventionsCli, ScoreRefusesABadSpecInOneLine) {
  expect_usage_error(tool("lmscope-score", "--model " + kTiny + " --ids 1,2,3 --intervene 'layers.1.attn.zz=zero'"),
                     "lmscope-score", {"unknown site 'layers.1.attn.zz'"});
  expect_error_line(tool("lmscope-score", "--model " + kTiny + " --ids 1,2,3 --intervene 'layers.1.resid_pre[pos=3]=zero'"),
                    "lmscope-score", {"pos 3 is past the run's last position 2"});
}
