// The HF goldens listed in golden/traces/manifest.json (made by golden/make_golden.py), shared
// by the CPU golden tests and the CUDA ones.
#pragma once
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "runs/run.h"
#include "generate/generator.h"
#include "model/load_model.h"

namespace lmscope::golden {

// The repository root: the build's, unless LMSCOPE_SOURCE_DIR says otherwise (a test binary
// built on one machine and run from another checkout, as scripts/gpu-check.sh does).
inline const std::string& root() {
  static const std::string r =
      std::getenv("LMSCOPE_SOURCE_DIR") ? std::getenv("LMSCOPE_SOURCE_DIR") : LMSCOPE_SOURCE_DIR;
  return r;
}

inline nlohmann::json manifest() {
  std::ifstream f(root() + "/golden/traces/manifest.json");
  if (!f) return nlohmann::json();
  return nlohmann::json::parse(f);
}

// The trace names, for INSTANTIATE_TEST_SUITE_P ("(no manifest)" makes the test fail, saying so).
inline std::vector<std::string> names() {
  std::vector<std::string> out;
  const nlohmann::json m = manifest();
  if (m.is_null()) return {"(no manifest)"};
  for (const auto& t : m["traces"]) out.push_back(t["name"]);
  return out;
}

// One manifest entry by name; null when absent.
inline nlohmann::json entry(const std::string& name) {
  const nlohmann::json m = manifest();   // named: a range-for over a temporary's member dangles
  if (m.is_null()) return m;
  for (const auto& t : m["traces"])
    if (t["name"] == name) return t;
  return nlohmann::json();
}

// Runs lmscope on a golden's inputs (prompt ids, padding side, cache, pad/eos) with the model
// at `model_path` (a directory or a .gguf) on `be`, the hooks `hooks` traced into `out`
// (experiments' run_traced: root attributes and generated_ids as lmscope-trace writes them);
// returns the generated ids.
inline std::vector<std::vector<int32_t>> run_like(const nlohmann::json& g, const std::string& model_path, Backend& be,
                                                  const std::string& hooks, const std::string& out) {
  LoadedModel m = load_model(model_path);
  Decoder decoder(m.cfg, m.weights, be);
  GenerateOptions opt;
  opt.prompts = g["prompt_ids"][0].is_array()
                    ? g["prompt_ids"].get<std::vector<std::vector<int32_t>>>()
                    : std::vector<std::vector<int32_t>>{g["prompt_ids"].get<std::vector<int32_t>>()};
  opt.padding_side = parse_padding_side(g["padding_side"]);
  opt.max_new_tokens = g["max_new_tokens"];
  opt.use_cache = g["use_cache"];
  opt.pad_id = g["pad_token_id"];
  opt.eos_ids = g["eos_token_ids"].get<std::vector<int32_t>>();

  ModelContext ctx;
  ctx.decoder = &decoder;
  ctx.model_path = model_path;
  ctx.command_line = "test";
  return run_traced(ctx, opt, HookSet(hooks, "", m.cfg.num_layers), out).new_tokens;
}

// golden/smollm2/manifest.json (SmolLM2-135M-Instruct chat goldens); null when absent.
inline nlohmann::json smollm2_manifest() {
  std::ifstream f(root() + "/golden/smollm2/manifest.json");
  if (!f) return nlohmann::json();
  return nlohmann::json::parse(f);
}

}  // namespace lmscope::golden
