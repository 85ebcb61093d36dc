// Stop conditions against HF generate (golden/stop/stop_refs.json, made by
// golden/make_stop_refs.py): lmscope-trace with the same prompts, eos ids and stop strings
// must generate the same ids, and name the stop reason HF's own criteria name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/test_util.h"
#include "tokenizer/ids_text.h"
#include "trace/trace_reader.h"

namespace {

const std::string kRoot = LMSCOPE_SOURCE_DIR;

nlohmann::json load_refs() {
  std::ifstream f(kRoot + "/golden/stop/stop_refs.json");
  return nlohmann::json::parse(f);
}

// A stop string as a shell word for --stop: escapes for the tool (\n, \\), quoted for the shell.
std::string stop_arg(const std::string& s) {
  std::string e;
  for (char c : s) {
    if (c == '\n') e += "\\n";
    else if (c == '\\') e += "\\\\";
    else if (c == '\'') e += "'\\''";
    else e += c;
  }
  return "'" + e + "'";
}

void run_case(const nlohmann::json& c) {
  SCOPED_TRACE(c["name"].get<std::string>() + ": " + c["note"].get<std::string>());
  const std::string model = kRoot + "/" + c["model"].get<std::string>();
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is absent (scripts/fetch-model.sh)";
  std::string cmd = std::string(LMSCOPE_BINARY_DIR) + "/lmscope-trace -q --model " + model;
  for (const auto& p : c["prompts"]) cmd += " --prompt-ids " + lmscope::join_ids(p.get<std::vector<int32_t>>());
  cmd += " --padding-side " + c["padding_side"].get<std::string>();
  cmd += " --pad-id " + std::to_string(c["pad_token_id"].get<int>());
  cmd += " --eos-ids " + lmscope::join_ids(c["eos_token_ids"].get<std::vector<int32_t>>());
  cmd += " --max-new-tokens " + std::to_string(c["max_new_tokens"].get<int>());
  for (const auto& s : c["stop_strings"]) cmd += " --stop " + stop_arg(s.get<std::string>());
  lmscope::testing_util::TempDir tmp;
  const std::string out = tmp.file("stop.h5");
  const auto r = lmscope::testing_util::run_cli(cmd + " --hooks sample.chosen --out " + out);
  ASSERT_EQ(r.code, 0) << cmd << "\n" << r.err;
  // The trace records the reasons (root attribute stop_reasons, a JSON list per row).
  const lmscope::TraceReader tr(out);
  EXPECT_EQ(nlohmann::json::parse(tr.root_attr_string("stop_reasons")), c["stop_reasons"]);
  EXPECT_EQ(nlohmann::json::parse(tr.root_attr_string("stop_strings")), c["stop_strings"]);
  EXPECT_EQ(nlohmann::json::parse(tr.root_attr_string("eos_token_ids")), c["eos_token_ids"]);
  for (size_t b = 0; b < c["generated"].size(); ++b) {
    const std::string row = "row " + std::to_string(b);
    const std::string ids = row + ": " + lmscope::join_ids(c["generated"][b].get<std::vector<int32_t>>()) + "\n";
    EXPECT_NE(r.out.find(ids), std::string::npos) << "HF generated " << ids << "lmscope printed:\n" << r.out;
    const std::string reason = row + " stop: " + c["stop_reasons"][b].get<std::string>() + "\n";
    EXPECT_NE(r.out.find(reason), std::string::npos) << "expected " << reason << "in:\n" << r.out;
  }
}

TEST(StopGolden, TinyQwen2MatchesHfGenerate) {
  const auto refs = load_refs();
  int n = 0;
  for (const auto& c : refs["cases"])
    if (c["model"] == "golden/models/tiny-qwen2") {
      run_case(c);
      ++n;
    }
  EXPECT_EQ(n, 5);
}

TEST(StopGolden, SmolLM2MatchesHfGenerate) {
  const auto refs = load_refs();
  int n = 0;
  for (const auto& c : refs["cases"])
    if (c["model"] != "golden/models/tiny-qwen2") {
      run_case(c);
      ++n;
    }
  EXPECT_EQ(n, 3);
}

}  // namespace
