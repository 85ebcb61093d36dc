// lmscope-patch --pairs: the sweep over a file of pairs is, cell by cell, the mean of the
// single-pair sweeps of the same pairs (each pair runs the same forwards as alone, so the
// numbers are the same doubles, summed in file order: compared to 4 ULPs), with the spread
// (population standard deviation, min, max) of those single runs. On the committed tiny model
// and on SmolLM2 (skipped when models/ lacks it). Bad pairs files are refused in one line
// naming the file and the line.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_test_util.h"

namespace {

const std::string kTiny = "--model " + kSourceDir + "/golden/models/tiny-qwen2";

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

struct SinglePair {
  std::string args;   // --clean-ids/--corrupt-ids or --clean/--corrupt, and --metric
};

// Runs --pairs over `pairs_jsonl` and each pair alone; checks mean, sd, min and max per cell.
void expect_pairs_are_the_mean(const std::string& model, const std::string& pairs_jsonl,
                               const std::vector<SinglePair>& singles, const std::string& common,
                               const std::string& pairs_only = "") {
  lmscope::testing_util::TempDir tmp;
  write(tmp.file("pairs.jsonl"), pairs_jsonl);
  const auto all = tool("lmscope-patch", model + " -q --pairs " + tmp.file("pairs.jsonl") + pairs_only + common + " --json " + tmp.file("all.json"));
  ASSERT_EQ(all.code, 0) << all.err;
  const nlohmann::json j = read_json(tmp.file("all.json"));
  ASSERT_EQ(j["num_pairs"], singles.size());
  std::vector<nlohmann::json> one;
  for (size_t i = 0; i < singles.size(); ++i) {
    const std::string out = tmp.file("one" + std::to_string(i) + ".json");
    const auto r = tool("lmscope-patch", model + " " + singles[i].args + common + " --json " + out);
    ASSERT_EQ(r.code, 0) << r.err;
    one.push_back(read_json(out));
    EXPECT_EQ(j["pairs"][i]["clean_metric"], one[i]["clean_metric"]) << "pair " << i;
  }
  const double n = double(singles.size());
  for (const auto& [site, grid] : j["sites"].items()) {
    const auto& mean = grid["mean"];
    ASSERT_EQ(mean.size(), one[0]["sites"][site]["normalized"].size()) << site;
    int spread_cells = 0;
    for (size_t l = 0; l < mean.size(); ++l)
      for (size_t c = 0; c < mean[l].size(); ++c) {
        double sum = 0, lo = INFINITY, hi = -INFINITY;
        for (const auto& o : one) {
          const double v = o["sites"][site]["normalized"][l][c].get<double>();
          sum += v;
          lo = std::min(lo, v);
          hi = std::max(hi, v);
        }
        double sq = 0;
        for (const auto& o : one) sq += std::pow(o["sites"][site]["normalized"][l][c].get<double>() - sum / n, 2);
        const std::string where = site + " layer " + std::to_string(l) + " column " + std::to_string(c);
        EXPECT_DOUBLE_EQ(mean[l][c].get<double>(), sum / n) << where;
        EXPECT_NEAR(grid["sd"][l][c].get<double>(), std::sqrt(sq / n), 1e-12) << where;
        EXPECT_EQ(grid["min"][l][c].get<double>(), lo) << where;
        EXPECT_EQ(grid["max"][l][c].get<double>(), hi) << where;
        spread_cells += hi - lo > 0.01;
      }
    EXPECT_GT(spread_cells, 0) << site << ": the pairs never disagree, so the test shows nothing about the mean";
  }
}

}  // namespace

TEST(PatchPairsCli, TinyModelPairsAreTheMeanOfSinglePairRuns) {
  const std::string a = "330,749,537,264,935,314,267,681,289,295,16", b = "330,749,537,264,935,314,267,681,42,295,16",
                    c = "330,749,537,264,935,77,267,681,289,295,16", d = "12,749,537,264,935,314,267,681,289,295,16";
  auto line = [](const std::string& clean, const std::string& corrupt, const std::string& metric) {
    return "{\"clean_ids\": [" + clean + "], \"corrupt_ids\": [" + corrupt + "]" + metric + "}\n";
  };
  // The second pair takes --metric; the third has its own (prob), and a blank line is skipped.
  const std::string jsonl = line(a, b, ", \"metric\": \"logit-diff:#549,#434\"") + "\n" + line(a, c, "") +
                            line(d, a, ", \"metric\": \"prob:#549\"");
  expect_pairs_are_the_mean(kTiny, jsonl,
                            {{"--clean-ids " + a + " --corrupt-ids " + b + " --metric 'logit-diff:#549,#434'"},
                             {"--clean-ids " + a + " --corrupt-ids " + c + " --metric 'logit-diff:#549,#434'"},
                             {"--clean-ids " + d + " --corrupt-ids " + a + " --metric 'prob:#549'"}},
                            " --sites resid_pre,attn_out,attn.z --rows-per-forward 7", " --metric 'logit-diff:#549,#434'");
}

TEST(PatchPairsCli, SmolLM2PairsAreTheMeanOfSinglePairRuns) {
  const std::string model = kSourceDir + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is absent: run scripts/fetch-model.sh";
  // Short IOI-style pairs of one template (the corrupted prompt names the other person), and
  // one site: 30 layers x 7 positions per pair, about a minute for the four runs on 2 cores.
  const std::vector<std::pair<std::string, std::string>> names = {{"Mary", "John"}, {"Alice", "Bob"}, {"Sarah", "Tom"}};
  std::string jsonl;
  std::vector<SinglePair> singles;
  for (const auto& [x, y] : names) {
    const std::string clean = x + " met " + y + "; " + y + " thanked";
    const std::string corrupt = x + " met " + y + "; " + x + " thanked";
    const std::string metric = "logit-diff:\\\" " + x + "\\\",\\\" " + y + "\\\"";   // in JSON
    jsonl += "{\"clean\": \"" + clean + "\", \"corrupt\": \"" + corrupt + "\", \"metric\": \"" + metric + "\"}\n";
    singles.push_back({"--clean '" + clean + "' --corrupt '" + corrupt + "' --metric 'logit-diff:\" " + x + "\",\" " + y + "\"'"});
  }
  expect_pairs_are_the_mean("--model " + model, jsonl, singles, " --sites resid_pre --rows-per-forward 105");
}

TEST(PatchPairsCli, BadPairsFilesAreOneLineNamingTheLine) {
  lmscope::testing_util::TempDir tmp;
  const std::string ok = "{\"clean_ids\": [1,2,3], \"corrupt_ids\": [1,2,4], \"metric\": \"prob:#5\"}\n";
  auto refused = [&](const std::string& name, const std::string& text, const std::vector<std::string>& needles,
                     const std::string& extra = "") {
    write(tmp.file(name), text);
    expect_error_line(tool("lmscope-patch", kTiny + " -q --pairs " + tmp.file(name) + extra), "lmscope-patch", needles);
  };
  refused("empty.jsonl", "\n  \n", {"empty.jsonl: no pairs"});
  refused("nojson.jsonl", ok + "{clean\n", {"nojson.jsonl:2: not JSON"});
  refused("missing.jsonl", ok + "{\"clean_ids\": [1,2,3], \"metric\": \"prob:#5\"}\n",
          {"missing.jsonl:2: give one of \"corrupt\" (text) and \"corrupt_ids\" (token ids)"});
  refused("both.jsonl", "{\"clean\": \"a\", \"clean_ids\": [1], \"corrupt_ids\": [2], \"metric\": \"prob:#5\"}\n",
          {"both.jsonl:1:", "not both"});
  refused("nometric.jsonl", ok + "{\"clean_ids\": [1,2,3], \"corrupt_ids\": [1,2,4]}\n",
          {"nometric.jsonl:2: no \"metric\" in this pair and no --metric"});
  refused("uneven.jsonl", "{\"clean_ids\": [1,2,3], \"corrupt_ids\": [1,2], \"metric\": \"prob:#5\"}\n",
          {"uneven.jsonl:1: clean prompt has 3 tokens, corrupted 2"});
  refused("lengths.jsonl", ok + ok + "{\"clean_ids\": [1,2,3,4], \"corrupt_ids\": [1,2,4,4], \"metric\": \"prob:#5\"}\n",
          {"lengths.jsonl:3: this pair has 4 tokens, the first (line 1) 3"});
  refused("vocab.jsonl", "{\"clean_ids\": [1,2,3], \"corrupt_ids\": [1,2,4], \"metric\": \"prob:#5000\"}\n",
          {"vocab.jsonl:1: metric token #5000 is outside the vocabulary (1024)"});
  refused("idvocab.jsonl", "{\"clean_ids\": [1,2,3], \"corrupt_ids\": [1,2,4000], \"metric\": \"prob:#5\"}\n",
          {"idvocab.jsonl:1: token id 4000 in \"corrupt_ids\" is outside the vocabulary (1024)"});
  refused("multi.jsonl", "{\"clean_ids\": [1,2,3], \"corrupt_ids\": [1,2,4], \"metric\": \"prob:golden fish\"}\n",
          {"multi.jsonl:1: --metric 'prob:golden fish':", "the metric needs one"});
  refused("same.jsonl", "{\"clean_ids\": [1,2,3], \"corrupt_ids\": [1,2,3], \"metric\": \"prob:#5\"}\n",
          {"same.jsonl:1: the clean and corrupted runs give the same metric"});
  expect_error_line(tool("lmscope-patch", kTiny + " --pairs " + tmp.file("absent.jsonl")), "lmscope-patch",
                    {"cannot read the pairs file"});
  write(tmp.file("ok.jsonl"), ok);
  expect_usage_error(tool("lmscope-patch", kTiny + " --pairs " + tmp.file("ok.jsonl") + " --clean-ids 1,2"), "lmscope-patch",
                     {"--pairs gives the prompts"});
}
