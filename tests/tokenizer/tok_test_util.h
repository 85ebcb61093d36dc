// Shared by the tokenizer tests: the committed corpus, HF references and tokenizers, each
// loaded once per test binary.
#pragma once
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace lmscope::tok_test {

inline const std::string kRoot = LMSCOPE_SOURCE_DIR;
inline const std::string kBin = LMSCOPE_BINARY_DIR;

// Skips the test, saying why (also on stdout, for ctest's log), when a file that a script
// fetches into models/ is missing.
#define SKIP_WITHOUT_FILE(path, fetcher)                                                       \
  do {                                                                                         \
    if (!std::filesystem::exists(path)) {                                                      \
      std::printf("[ skipped ] %s is missing (%s fetches it)\n", (path).c_str(), fetcher);      \
      GTEST_SKIP() << (path) << " is missing (" << (fetcher) << " fetches it)";                \
    }                                                                                          \
  } while (0)

// The message of what f throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

// name -> directory, as golden/make_tokenizer_refs.py VOCABS
inline const std::map<std::string, std::string>& vocab_dirs() {
  static const std::map<std::string, std::string> m = {
      {"qwen-bpe", "golden/tokenizers/qwen-bpe"},
      {"deepseek-v3-bpe", "golden/tokenizers/deepseek-v3-bpe"},
      {"tiny-qwen2", "golden/models/tiny-qwen2"},
      {"tiny-options-a", "golden/tokenizers/tiny-options-a"},
      {"tiny-options-b", "golden/tokenizers/tiny-options-b"},
  };
  return m;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline nlohmann::json read_json(const std::string& rel) { return nlohmann::json::parse(read_text(kRoot + "/" + rel)); }

inline const std::vector<std::string>& corpus() {
  static const std::vector<std::string> c = read_json("golden/tokenizers/corpus.json").get<std::vector<std::string>>();
  return c;
}

inline const tok::Tokenizer& tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<tok::Tokenizer>> cache;
  auto it = cache.find(name);
  if (it == cache.end())
    it = cache.emplace(name, std::make_unique<tok::Tokenizer>(tok::Tokenizer::load(kRoot + "/" + vocab_dirs().at(name))))
             .first;
  return *it->second;
}

inline const nlohmann::json& refs(const std::string& name) {
  static std::map<std::string, nlohmann::json> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, read_json("golden/tokenizers/refs/" + name + ".json")).first;
  return it->second;
}

// "[1, 2, 3]" for failure messages
inline std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(ids[i]);
  }
  return s + "]";
}

}  // namespace lmscope::tok_test
