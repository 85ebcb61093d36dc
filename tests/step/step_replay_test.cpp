// lmscope-step: a stored trace walked without the model. Its pages are those lmscope-trace
// --step prints for the same run (one renderer, the same float32 values); on the HF golden
// trace the pages show HF's own numbers.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/format_number.h"
#include "tests/step/step_pages.h"
#include "tests/test_util.h"
#include "trace/trace_reader.h"

using namespace lmscope;
using namespace lmscope::step_test;
using namespace lmscope::testing_util;

namespace {

const std::string kTrace = LMSCOPE_BINARY_DIR "/lmscope-trace";
const std::string kStep = LMSCOPE_BINARY_DIR "/lmscope-step";
const std::string kTiny = LMSCOPE_SOURCE_DIR "/golden/models/tiny-qwen2";
const std::string kGolden = LMSCOPE_SOURCE_DIR "/golden/traces/tiny-qwen2-a.h5";

}  // namespace

TEST(StepReplay, PagesEqualTheLiveWalkOfTheSameRun) {
  TempDir dir;
  const std::string h5 = dir.file("t.h5");
  CliRun live = run_cli(kTrace + " --model " + kTiny + " --prompt-ids 42,308,333,746,3 --max-new-tokens 2 --step --out " +
                        h5 + " < /dev/null");
  ASSERT_EQ(live.code, 0) << live.err;
  CliRun stored = run_cli(kStep + " " + h5 + " < /dev/null");
  ASSERT_EQ(stored.code, 0) << stored.err;
  const std::vector<std::string> titles = page_titles(stored.out);
  EXPECT_EQ(titles, page_titles(live.out));
  EXPECT_EQ(titles.size(), 1u + 2u * 13u + 1u);   // tokenizer, 2 x (inputs, embeddings, 3 x 3 layers, logits, sampling), end
  // Every page, attention numbers included, is the same text.
  EXPECT_EQ(walk(stored.out), walk(live.out));
  const std::string att = page_text(stored.out, "step 1 (decode) · layer 2 · attention");
  ASSERT_FALSE(att.empty());
  EXPECT_EQ(att, page_text(live.out, "step 1 (decode) · layer 2 · attention"));
  // lmscope-step read no model: the generated ids come from the trace.
  EXPECT_NE(stored.out.find("row 0: "), std::string::npos);
}

TEST(StepReplay, PagesWhoseHooksAreNotInTheTraceSayWhichToTrace) {
  TempDir dir;
  const std::string h5 = dir.file("t.h5");
  CliRun r = run_cli(kTrace + " --model " + kTiny + " --prompt-ids 5,6,7 --max-new-tokens 1 -q --hooks 'tokens.*,logits' --out " + h5);
  ASSERT_EQ(r.code, 0) << r.err;
  CliRun s = run_cli(kStep + " " + h5 + " < /dev/null");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_NE(s.out.find("(not traced: embed; "), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("=== step 0 (prefill) · layers ===\n(no layers.* hooks in the trace"), std::string::npos);
  EXPECT_NE(s.out.find("(not traced: sample.candidates, sample.chosen; "), std::string::npos);
  EXPECT_NE(s.out.find("rank  id      token"), std::string::npos);   // the logits were traced
}

// The committed HF golden: 11 prompt tokens, 8 greedy steps (golden/traces/manifest.json).
TEST(StepReplay, TheHfGoldenTraceWalksWithHfsNumbers) {
  CliRun s = run_cli(kStep + " " + kGolden + " --model " + kTiny + " < /dev/null");
  ASSERT_EQ(s.code, 0) << s.err;
  const std::vector<std::string> titles = page_titles(s.out);
  // One ids page (lmscope-hf-trace writes no /tokenizer group), then 8 x 13 pages.
  ASSERT_EQ(titles.size(), 1u + 8u * 13u + 1u);
  EXPECT_NE(s.out.find("ids 330,749,537,264,935,314,267,681,289,295,16 (the trace has no /tokenizer/row_0 group"),
            std::string::npos);
  // HF's greedy choices, from the manifest: 549 first, 681 last.
  EXPECT_NE(page_text(s.out, "step 0 (prefill) · sampling decision").find("chosen: 549 "), std::string::npos);
  EXPECT_NE(page_text(s.out, "step 7 (decode) · sampling decision").find("chosen: 681 "), std::string::npos);
  EXPECT_NE(s.out.find("row 0: 549,1011,224,126,1017,584,282,681"), std::string::npos);
  // lmscope-hf-trace records sample.candidates, raw, chosen and finished only: the other
  // columns are "-", never a made-up "cut".
  const std::string sampling = page_text(s.out, "step 0 (prefill) · sampling decision");
  EXPECT_NE(sampling.find("(not traced: sample.penalized, sample.scaled, sample.probs, sample.kept, sample.survivors; "),
            std::string::npos) << sampling;
  EXPECT_EQ(sampling.find(" cut\n"), std::string::npos);

  // The attention page draws the stored probabilities: head 0's strongest key for the last
  // query, read here from the trace itself.
  const std::string att = page_text(s.out, "step 0 (prefill) · layer 0 · attention");
  ASSERT_FALSE(att.empty());
  TraceReader tr(kGolden);
  const HookData p = tr.read(0, "layers.0.attn.probs");   // [1, 4, 11, 11]
  const int64_t T = p.shape[2], S = p.shape[3];
  int64_t best = 0;
  for (int64_t s2 = 0; s2 < S; ++s2)
    if (p.values[size_t((T - 1) * S + s2)] > p.values[size_t((T - 1) * S + best)]) best = s2;
  const std::string strongest = fmt("%.2f", p.values[size_t((T - 1) * S + best)]);
  EXPECT_NE(att.find("head 0 (KV head 0); the last query attends most to " + std::to_string(best) + " "), std::string::npos) << att;
  EXPECT_NE(att.find("(" + strongest + ")"), std::string::npos);

  // Key columns are labelled with their tokens: the first line above head 0's grid holds each
  // column's first two characters, from tokenizer.json's vocabulary (Ġ is a space, drawn ␣).
  std::ifstream tj(kTiny + "/tokenizer.json");
  const nlohmann::json vocab = nlohmann::json::parse(tj)["model"]["vocab"];
  std::map<int, std::string> piece;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) piece[it.value().get<int>()] = it.key();
  std::string first_line = "     ";   // the row labels q0..q10 are 3 wide, then " |"
  for (int id : {330, 749, 537, 264, 935, 314, 267, 681, 289, 295, 16}) {
    std::string t = piece.at(id);
    if (t.rfind("\xC4\xA0", 0) == 0) t = "\xE2\x90\xA3" + t.substr(2);   // Ġx -> ␣x
    const size_t one = t.rfind("\xE2\x90\xA3", 0) == 0 ? 3 : 1;           // bytes of the first character
    std::string cell = t.substr(0, one + (t.size() > one ? 1 : 0));
    if (t.size() == one) cell += " ";
    first_line += cell;
  }
  const size_t head0 = att.find("head 0 (KV head 0)");
  const size_t line = att.find('\n', head0) + 1;
  EXPECT_EQ(att.substr(line, att.find('\n', line) - line), first_line) << att;
}

TEST(StepReplay, WithoutATokenizerTokensShowAsIds) {
  // The golden's model_path (golden/models/tiny-qwen2) is relative to the repository root; from
  // the build directory it does not exist.
  CliRun s = run_cli("cd " LMSCOPE_BINARY_DIR " && " + kStep + " " + kGolden + " < /dev/null");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_NE(s.err.find("no tokenizer at 'golden/models/tiny-qwen2': tokens show as #id (give --model)"), std::string::npos) << s.err;
  EXPECT_NE(page_text(s.out, "step 0 (prefill) · sampling decision").find("chosen: 549 #549"), std::string::npos);
}

// HF's trace of SmolLM2 made from the GGUF: transformers records a quantization_config in its
// config, which a checkpoint to load would be refused for; a replay needs only the shapes.
TEST(StepReplay, HfsTraceOfAGgufWalks) {
  const std::string golden = LMSCOPE_SOURCE_DIR "/golden/smollm2/smollm2-chat-0.h5";
  ASSERT_NE(TraceReader(golden).root_attr_string("config_json").find("quantization_config"), std::string::npos);
  CliRun s = run_cli("cd " LMSCOPE_SOURCE_DIR " && " + kStep + " " + golden + " < /dev/null");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_FALSE(page_text(s.out, "step 0 (prefill) · sampling decision").empty()) << s.out.substr(0, 2000);
}

TEST(StepReplay, BadInputIsOneLineAndExitCode1) {
  CliRun missing = run_cli(kStep + " /nonexistent/t.h5");
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.err, "lmscope-step: error: cannot open trace '/nonexistent/t.h5': No such file or directory\n");
  CliRun not_trace = run_cli(kStep + " " + kTiny + "/config.json");
  EXPECT_EQ(not_trace.code, 1);
  EXPECT_EQ(not_trace.err, "lmscope-step: error: '" + kTiny + "/config.json' is not an HDF5 file\n");
  CliRun row = run_cli(kStep + " " + kGolden + " --row 1");
  EXPECT_EQ(row.code, 1);
  EXPECT_EQ(row.err, "lmscope-step: error: --row 1: the trace has 1 row(s)\n");
}
