// lmscope-score --data: the corpus loss is the token-weighted mean NLL of its documents, i.e.
// the mean of the per-document `lmscope-score --text` runs weighted by their predicted tokens,
// clean and with --intervene. Documents run batched (right-padded) here and alone there: the
// per-token float32 logits differ by summation order only, so the losses agree to 1e-4 nats
// (docs/score.md, "Over a corpus"). Bad corpora are one line naming the file and the line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/cli/cli_test_util.h"

namespace {

const std::string kTinyModel = "--model " + kSourceDir + "/golden/models/tiny-qwen2";
constexpr double kBatchedVsAlone = 1e-4;   // nats: float32 logits, another summation order

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

struct Weighted {
  double loss = 0;
  int64_t predicted = 0;
};

// The token-weighted mean of single-text runs of `texts`.
Weighted single_runs(const std::string& model, const std::vector<std::string>& texts, const std::string& extra) {
  double nll = 0;
  int64_t n = 0;
  for (const std::string& t : texts) {
    const auto r = tool("lmscope-score", model + " --json --text '" + t + "'" + extra);
    EXPECT_EQ(r.code, 0) << r.err;
    if (r.code != 0) continue;
    const nlohmann::json j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    nll += j["loss"].get<double>() * j["n_predicted"].get<double>();
    n += j["n_predicted"].get<int64_t>();
  }
  return {nll / double(n), n};
}

void expect_corpus_is_the_weighted_mean(const std::string& model, const std::vector<std::string>& texts) {
  lmscope::testing_util::TempDir tmp;
  // JSONL with blank lines and a blank field between the documents: skipped, never scored.
  std::string jsonl = "\n";
  for (const std::string& t : texts) jsonl += nlohmann::json({{"id", 1}, {"body", t}}).dump() + "\n{\"body\": \"  \"}\n";
  write(tmp.file("c.jsonl"), jsonl);
  const std::string ablate = " --intervene 'layers.1.attn_out=zero'";
  const auto r = tool("lmscope-score", model + " --json -q --batch 3 --field body --data " + tmp.file("c.jsonl") + ablate +
                                           " --per-doc " + tmp.file("docs.jsonl"));
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const Weighted clean = single_runs(model, texts, ""), ablated = single_runs(model, texts, ablate);
  EXPECT_EQ(j["documents"], texts.size());
  EXPECT_EQ(j["blank_lines"], texts.size() + 1);
  EXPECT_EQ(j["predicted"], clean.predicted);
  EXPECT_NEAR(j["loss"].get<double>(), clean.loss, kBatchedVsAlone);
  EXPECT_NEAR(j["loss_intervened"].get<double>(), ablated.loss, kBatchedVsAlone);
  EXPECT_DOUBLE_EQ(j["difference"].get<double>(), j["loss_intervened"].get<double>() - j["loss"].get<double>());
  EXPECT_GT(std::abs(ablated.loss - clean.loss), 100 * kBatchedVsAlone) << "the ablation changes nothing: no test of --intervene";
  // The per-document file: document ids are line indices, and its weighted mean is the corpus's.
  std::ifstream docs(tmp.file("docs.jsonl"));
  std::string line;
  double nll = 0;
  int64_t n = 0, index = 0;
  while (std::getline(docs, line)) {
    const nlohmann::json d = nlohmann::json::parse(line);
    EXPECT_EQ(d["doc"], 1 + 2 * index++);
    nll += d["nll_sum"].get<double>();
    n += d["predicted"].get<int64_t>();
  }
  EXPECT_EQ(index, int64_t(texts.size()));
  EXPECT_DOUBLE_EQ(j["loss"].get<double>(), nll / double(n));
}

}  // namespace

TEST(ScoreCorpusCli, TinyCorpusLossIsTheTokenWeightedMeanOfDocuments) {
  expect_corpus_is_the_weighted_mean(kTinyModel, {"The cat sat on the mat.", "A dog ran in the park today.", "Hello",
                                                  "The capital of France is Paris.", "one two three four five six seven",
                                                  "Rain."});
}

TEST(ScoreCorpusCli, SmolLM2CorpusLossIsTheTokenWeightedMeanOfDocuments) {
  const std::string model = kSourceDir + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is absent: run scripts/fetch-model.sh";
  expect_corpus_is_the_weighted_mean("--model " + model, {"The capital of France is Paris.", "Water boils at one hundred degrees.",
                                                          "Hi there", "She opened the door and walked into the garden."});
}

TEST(ScoreCorpusCli, TextAndIdCorporaAndOneTokenDocuments) {
  lmscope::testing_util::TempDir tmp;
  write(tmp.file("c.txt"), "The cat sat.\n\nThe dog ran.\n");
  write(tmp.file("c.ids"), "330, 749, 537\n42\n1 2 3 4\n");
  const auto text = tool("lmscope-score", kTinyModel + " -q --data " + tmp.file("c.txt"));
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("2 documents"), std::string::npos) << text.out;
  const auto ids = tool("lmscope-score", kTinyModel + " -q --json --data " + tmp.file("c.ids"));
  ASSERT_EQ(ids.code, 0) << ids.err;
  const nlohmann::json j = nlohmann::json::parse(ids.out);
  EXPECT_EQ(j["documents"], 2);
  EXPECT_EQ(j["one_token_documents"], 1);   // "42": nothing to predict
  EXPECT_EQ(j["predicted"], 2 + 3);
}

TEST(ScoreCorpusCli, BadCorporaAreOneLineNamingTheLine) {
  lmscope::testing_util::TempDir tmp;
  auto refused = [&](const std::string& name, const std::string& text, const std::vector<std::string>& needles,
                     const std::string& extra = "") {
    write(tmp.file(name), text);
    expect_error_line(tool("lmscope-score", kTinyModel + " -q --data " + tmp.file(name) + extra), "lmscope-score", needles);
  };
  refused("empty.txt", "\n \n", {"empty.txt: no documents (2 lines, all blank)"});
  refused("utf8.txt", "good\nbad \xff byte\n", {"utf8.txt:2: invalid UTF-8 at byte 4 of the line"});
  refused("field.jsonl", "{\"text\": \"a b\"}\n{\"body\": \"b\"}\n", {"field.jsonl:2: no field 'text' in this JSON line"});
  refused("kind.jsonl", "{\"text\": 3}\n", {"kind.jsonl:1: the field 'text' holds a JSON integer, not a string"});
  refused("json.jsonl", "{\"text\": \"a b\"}\nnot json\n", {"json.jsonl:2: not JSON"});
  refused("vocab.ids", "1 2 3\n4 5000 5\n", {"vocab.ids:2: token id 5000 is outside the vocabulary (1024)"});
  refused("word.ids", "1 2 x\n", {"word.ids:1: 'x' is not a token id"});
  refused("single.ids", "7\n9\n", {"single.ids: no document has two tokens"});
  expect_usage_error(tool("lmscope-score", kTinyModel + " --data x.txt --text hi"), "lmscope-score", {"no --text, --ids or --range"});
  expect_usage_error(tool("lmscope-score", kTinyModel + " --text hi --per-doc d.jsonl"), "lmscope-score", {"--per-doc needs --data"});
}
