// The sampling options shared by the tools that choose tokens (lmscope-trace, lmscope-sample),
// with HF's names and meanings (generate/sampler.h, docs/sampling.md).
#pragma once
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include "generate/sampler.h"
#include "tokenizer/utf8.h"
#include "tools/cli_common.h"

namespace lmscope::cli {

// --seed: CLI11 would wrap a negative number around to a huge uint64, and clamp 2^64 to
// 2^64-1 without a word; refuse both instead.
inline CLI::Validator nonnegative_seed() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        if (s.find('-') != std::string::npos) return "a seed must not be negative";
        errno = 0;
        char* end = nullptr;
        std::strtoull(s.c_str(), &end, 0);
        if (errno == ERANGE) return "seed " + s + " is over 2^64-1";
        return "";
      },
      "NONNEGATIVE");
}

// Adds --temperature, --top-k, --top-p, --min-p, --repetition-penalty and --seed (and
// --do-sample when `with_do_sample`) writing into `sc`.
inline void add_sampling_options(CLI::App& app, SamplingConfig& sc, bool with_do_sample) {
  if (with_do_sample) app.add_flag("--do-sample", sc.do_sample, "sample instead of greedy");
  app.add_option("--temperature", sc.temperature, "> 0 when sampling (HF refuses 0: use greedy)")
      ->check(finite_float())
      ->capture_default_str();
  app.add_option("--top-k", sc.top_k, "0 = off")->capture_default_str();
  app.add_option("--top-p", sc.top_p, "in [0, 1]; 1 = off, 0 keeps only the best token (as HF)")
      ->check(finite_float())
      ->capture_default_str();
  app.add_option("--min-p", sc.min_p, "in [0, 1]; 0 = off")->check(finite_float())->capture_default_str();
  app.add_option("--repetition-penalty", sc.repetition_penalty, "> 0; 1 = off")
      ->check(finite_float())
      ->capture_default_str();
  app.add_option("--seed", sc.seed, "0 .. 2^64-1")->check(nonnegative_seed())->capture_default_str();
}

// The settings HF refuses, as a usage error of `tool` (one line, exit 2); nullopt when valid.
inline std::optional<int> check_sampling(const char* tool, const SamplingConfig& sc) {
  try {
    validate(sc);
  } catch (const std::invalid_argument& e) {
    // validate() names HF's field; the user typed the option
    const std::string msg = e.what();
    for (const char* field : {"repetition_penalty", "temperature", "top_k", "top_p", "min_p"})
      if (msg.rfind(field, 0) == 0) {
        std::string opt = std::string("--") + field;
        for (char& c : opt)
          if (c == '_') c = '-';
        return usage_error(tool, opt + ": " + msg);
      }
    return usage_error(tool, msg);
  }
  return std::nullopt;
}

// A --stop value with its escapes read: \n, \t, \r, \\ (so `--stop "\n\n"` is two newlines).
// Throws std::invalid_argument for another escape and for a string that ends up empty.
inline std::string parse_stop_string(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    const char c = ++i < s.size() ? s[i] : '\0';
    if (c == 'n') out += '\n';
    else if (c == 't') out += '\t';
    else if (c == 'r') out += '\r';
    else if (c == '\\') out += '\\';
    else throw std::invalid_argument("--stop '" + s + "': unknown escape (use \\n, \\t, \\r or \\\\)");
  }
  if (out.empty()) throw std::invalid_argument("--stop: a stop string is empty (it would never match)");
  // As --prompt: a string that is not UTF-8 could never be the decoded text it is matched in.
  try {
    utf8::check(out, "--stop");
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
  return out;
}

}  // namespace lmscope::cli
