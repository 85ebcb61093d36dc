// BPE training (lib/tokenizer/bpe_train.h, lmscope-bpe --train) against HF tokenizers'
// BpeTrainer on the lesson corpus (golden/tokenizers/bpe-train/refs.json, made by
// golden/make_bpe_train_refs.py), the tokenizer.json it saves, and bad input.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/gguf/gguf_test_util.h"
#include "tests/test_util.h"
#include "tests/tokenizer/tok_test_util.h"
#include "tokenizer/bpe_train.h"

using namespace lmscope;
using namespace lmscope::tok_test;

namespace {

const std::string kCorpus = "walkthroughs/data/zh-en-corpus.txt";

const nlohmann::json& train_refs() {
  static const nlohmann::json j = read_json("golden/tokenizers/bpe-train/refs.json");
  return j;
}

// The trainer after the golden's number of merges (trained once for all tests).
const tok::BpeTrainer& trained() {
  static const std::unique_ptr<tok::BpeTrainer> t = [] {
    auto tr = std::make_unique<tok::BpeTrainer>(read_text(kRoot + "/" + kCorpus), kCorpus);
    const int n = train_refs()["merges_asked"].get<int>();
    for (int i = 0; i < n; ++i)
      if (!tr->step()) throw std::runtime_error("training stopped early");
    return tr;
  }();
  return *t;
}

TEST(BpeTrain, LearnsTheMergesOfHfBpeTrainer) {
  const tok::BpeTrainer& t = trained();
  const nlohmann::json& hf = train_refs()["merges"];
  ASSERT_EQ(hf.size(), t.merges().size()) << "HF learned another number of merges (a merge reused a token?)";
  for (size_t i = 0; i < hf.size(); ++i) {
    const tok::LearnedMerge& m = t.merges()[i];
    ASSERT_EQ(nlohmann::json::array({t.token(m.left), t.token(m.right)}), hf[i]) << "merge " << i;
  }
  // ids too: the byte symbols in HF's order, then one new id per merge
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t id = 0; id < t.vocab_size(); ++id) vocab[t.token(int32_t(id))] = id;
  EXPECT_EQ(vocab, train_refs()["vocab"]);
  // Equal counts happen (the tie rule matters): merges whose count equals the next one's.
  int ties = 0;
  for (size_t i = 0; i + 1 < t.merges().size(); ++i) ties += t.merges()[i].count == t.merges()[i + 1].count;
  EXPECT_GT(ties, 10);
  std::printf("[ train ] %zu merges equal HF's BpeTrainer; %d consecutive merges with equal counts\n", hf.size(), ties);
}

TEST(BpeTrain, CountsNeverIncrease) {
  const auto& ms = trained().merges();
  for (size_t i = 0; i + 1 < ms.size(); ++i) EXPECT_GE(ms[i].count, ms[i + 1].count) << "merge " << i;
}

TEST(BpeTrain, SavedTokenizerEncodesLikeHf) {
  const nlohmann::json j = nlohmann::json::parse(trained().tokenizer_json().dump());
  const tok::Tokenizer t = tok::Tokenizer::from_json(j, "trained");
  for (const nlohmann::json& r : train_refs()["texts"])
    EXPECT_EQ(t.encode(r["text"].get<std::string>()), r["ids"].get<std::vector<int32_t>>()) << r["text"];
}

// Equal counts: the pair with the smaller (left id, right id) first, whatever the corpus order.
// Byte symbols are numbered in the order of their characters: 'a' < 'c'.
TEST(BpeTrain, TiesGoToTheSmallerPair) {
  for (const char* corpus : {"ab\ncd\n", "cd\nab\n"}) {
    tok::BpeTrainer t(corpus, "c");
    auto m = t.step();
    ASSERT_TRUE(m);
    EXPECT_EQ(t.token(m->merged), "ab") << corpus;
    EXPECT_EQ(m->count, 1);
  }
}

// "aaaa": (a,a) counts 3 occurrences; merging left to right without overlap gives [aa aa].
TEST(BpeTrain, MergesLeftToRightWithoutOverlap) {
  tok::BpeTrainer t("aaaa", "c");
  auto m = t.step();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->count, 3);
  std::vector<std::vector<int32_t>> w = t.initial_symbols("aaaa");
  ASSERT_EQ(w.size(), 1u);
  tok::BpeTrainer::apply(w[0], *m);
  EXPECT_EQ(w[0], (std::vector<int32_t>{m->merged, m->merged}));
  auto next = t.step();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->count, 1);   // (aa, aa) once
  EXPECT_EQ(t.token(next->merged), "aaaa");
  EXPECT_FALSE(t.step());      // one symbol left: nothing to merge
}

TEST(BpeTrain, BadCorpusIsOneLineWithTheByteOffset) {
  EXPECT_EQ(error_of([] { tok::BpeTrainer("", "empty.txt"); }),
            "empty.txt: no text to train on (the file is empty or only line breaks)");
  EXPECT_EQ(error_of([] { tok::BpeTrainer("\n\n", "blank.txt"); }),
            "blank.txt: no text to train on (the file is empty or only line breaks)");
  const std::string m = error_of([] { tok::BpeTrainer("ok\nab\xFF", "bad.txt"); });
  EXPECT_NE(m.find("bad.txt is not valid UTF-8"), std::string::npos) << m;
  EXPECT_NE(m.find("byte offset 5"), std::string::npos) << m;
}

// ---- the command line ------------------------------------------------------------------------

testing_util::CliRun bpe(const std::string& args) { return testing_util::run_cli(kBin + "/lmscope-bpe " + args); }

TEST(BpeTrainCli, WatchesTheWordBecomeOneSymbol) {
  testing_util::CliRun r = bpe("--train " + kRoot + "/" + kCorpus + " --merges 500 --watch 中华人民共和国");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("watch: \"\\xE4\" \"\\xB8\" \"\\xAD\""), std::string::npos) << r.out.substr(0, 600);
  EXPECT_NE(r.out.find("watch after 500 merges: \"中华人民共和国\"  (1 symbol)"), std::string::npos);
  // the first merge line is HF's first merge
  const nlohmann::json& first = train_refs()["merges"][0];
  const std::string line = "    0 ";
  const size_t at = r.out.find("\n" + line);
  ASSERT_NE(at, std::string::npos) << r.out.substr(0, 600);
  const std::string row = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  const std::string pair =
      std::string("\"").append(first[0].get<std::string>()).append("\" + \"").append(first[1].get<std::string>()).append("\"");
  EXPECT_NE(row.find(pair), std::string::npos) << row;
}

TEST(BpeTrainCli, SaveWritesATokenizerThatEncodesLikeHf) {
  testing_util::TempDir tmp;
  const std::string out = tmp.file("tokenizer.json");
  testing_util::CliRun r = bpe("--train " + kRoot + "/" + kCorpus + " --merges 500 --save " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  const tok::Tokenizer t = tok::Tokenizer::load(out);
  for (const nlohmann::json& x : train_refs()["texts"])
    EXPECT_EQ(t.encode(x["text"].get<std::string>()), x["ids"].get<std::vector<int32_t>>()) << x["text"];
}

TEST(BpeTrainCli, BadInputIsOneLine) {
  testing_util::TempDir tmp;
  const std::string empty = tmp.file("empty.txt"), bad = tmp.file("bad.txt"), corpus = tmp.file("c.txt");
  iotest::write_file(empty, "");
  iotest::write_file(bad, "hello\n\xE4\xB8world");
  iotest::write_file(corpus, "hello world\n");
  struct Case {
    std::string args;
    int code;
    std::string says;
  };
  const std::string long_line = tmp.file("long.txt");
  iotest::write_file(long_line, "short\n" + std::string((size_t(1) << 20) + 1, 'a') + "\n");
  const std::string no_tok_gguf = tmp.file("no-tokenizer.gguf");
  iotest::write_file(no_tok_gguf, ggtest::tiny_gguf({}).build());
  for (const Case& c : std::vector<Case>{
           {"--train " + empty, 1, "no text to train on"},
           {"--train " + corpus + " --merges 0", 2, "--merges must be at least 1, got 0"},
           {"--train " + bad, 1, "is not valid UTF-8: bad byte 0xE4 at byte offset 6"},
           {"--train " + tmp.file("absent.txt"), 1, "absent.txt': No such file or directory"},
           {"--train " + long_line, 1, "long.txt: line 2 is 1048577 bytes; --train reads lines of at most 1048576"},
           {"--tokenizer " + no_tok_gguf + " hi", 1, "key 'tokenizer.ggml.model' is missing: the file carries no tokenizer"},
           {"--watch x hi --tokenizer " + no_tok_gguf, 2, "--watch needs --train"},
       }) {
    testing_util::CliRun r = bpe(c.args);
    EXPECT_EQ(r.code, c.code) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("lmscope-bpe: error: ", 0), 0u) << r.err;
  }
}

}  // namespace
