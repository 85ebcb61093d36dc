// The model and prompt options shared by the tools: a model path (whatever load_model takes,
// opened by runs/open_model.h), prompts as token ids or as text encoded by the model's
// tokenizer, optionally wrapped in the chat template.
//
//   --model golden/models/tiny-qwen2 --prompt-ids 1,2,3 --prompt-ids 4,5
//   --model golden/models/tiny-qwen2 --prompt "Hello" --prompt "I love pizza" --chat --chat-format chatml
#pragma once
#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runs/open_model.h"
#include "tokenizer/chat.h"
#include "tokenizer/encode_trace.h"
#include "tokenizer/ids_text.h"
#include "tokenizer/tokenizer.h"
#include "tools/cli_common.h"

namespace lmscope::cli {

struct ModelArgs {
  std::string model, backend = "cpu", dtype = "f32", cpu_activations = "f32";
  std::vector<std::string> prompt_ids, prompts;
  bool chat = false;
  std::string chat_format = "template";
  int pad_override = -1;

  void add_to(CLI::App& app) {
    app.add_option("--model", model, "model: a Hugging Face directory (config.json + safetensors) or a .gguf file")
        ->required();
    app.add_option("--prompt-ids", prompt_ids, "a prompt as token ids, e.g. 1,2,3 (repeat for more prompts)");
    app.add_option("--prompt", prompts, "a prompt as text, encoded by the model's tokenizer (repeat for more)");
    app.add_flag("--chat", chat, "wrap each --prompt as a user message in the chat template");
    app.add_option("--chat-format", chat_format, "template (the tokenizer's own), chatml, deepseek-r1 or gemma")
        ->capture_default_str();
    app.add_option("--pad-id", pad_override, "pad token id (default: generation_config/config, else eos)")
        ->check(CLI::NonNegativeNumber);   // -1 was taken as "not given"
    app.add_option("--backend", backend, "cpu, cuda or auto (cuda when a device is usable)")->capture_default_str();
    app.add_option("--dtype", dtype, "compute dtype: f32, or bf16 (cuda)")->capture_default_str();
    app.add_option("--cpu-activations", cpu_activations,
                   "cpu: f32 (exact), or q8 (int8 activations before each GGUF-block matmul, llama.cpp's numbers)")
        ->capture_default_str();
  }
};

// The model (runs/open_model.h) and the prompts of the command line.
struct ToolModel : OpenModel {
  std::vector<std::vector<int32_t>> prompts;   // in the order: --prompt-ids, then --prompt
  std::vector<std::string> prompt_texts;       // text for display ("" where only ids were given)
};

// The tokenizer beside a model (runs/open_model.h), under the name lmscope-step and
// lmscope-report call it by.
inline std::optional<tok::Tokenizer> load_tool_tokenizer(const std::string& model_path) {
  return load_model_tokenizer(model_path);
}

// Opens a.model into `m` in place (m.ctx points into m: do not move it afterwards) and encodes
// the prompts; `cmd` is the command line the traces record. The experiment tests call it too.
inline void load_tool_model_into(ToolModel& m, const ModelArgs& a, const std::string& cmd, bool need_prompts = true) {
  open_model(m, ModelOptions{a.model, a.backend, a.dtype, a.cpu_activations, a.pad_override}, cmd,
             std::string("lmscope ") + LMSCOPE_VERSION);
  for (const std::string& p : a.prompt_ids) {
    m.prompts.push_back(parse_ids(p, "--prompt-ids"));
    m.prompt_texts.push_back(m.tokenizer ? m.ctx.text(m.prompts.back()) : "");
    // The merges that make these ids from their text, when the text encodes back to them.
    if (m.tokenizer) try {
        EncodeTrace et;
        if (m.tokenizer->encode(m.tokenizer->decode(m.prompts.back()), false, &et) == m.prompts.back())
          m.ctx.encodings.push_back(std::move(et));
      } catch (const std::exception&) {   // ids the tokenizer cannot decode: no merges to show
      }
  }
  if (!a.prompts.empty() && !m.tokenizer)
    throw std::runtime_error("--prompt: no tokenizer.json beside the model '" + a.model + "' (nor a GGUF tokenizer); give --prompt-ids");
  if (a.chat && a.prompts.empty()) throw std::runtime_error("--chat formats --prompt text; no --prompt given");
  for (const std::string& p : a.prompts) {
    std::string text = p;
    if (a.chat)
      text = tok::format_chat(*m.tokenizer, {tok::ChatMessage{"user", p}}, true, tok::parse_chat_format(a.chat_format));
    EncodeTrace et;
    m.prompts.push_back(encode_prompt(*m.tokenizer, text, !a.chat, et, "--prompt"));
    m.ctx.encodings.push_back(std::move(et));
    m.prompt_texts.push_back(p);
  }
  if (need_prompts && m.prompts.empty()) throw std::runtime_error("no prompt: give --prompt-ids or --prompt");
  for (const auto& p : m.prompts) check_prompt_ids(p, m.loaded.cfg.vocab_size);
}

inline std::unique_ptr<ToolModel> load_tool_model(const ModelArgs& a, int argc, char** argv, bool need_prompts = true) {
  auto m = std::make_unique<ToolModel>();
  load_tool_model_into(*m, a, command_line(argc, argv), need_prompts);
  return m;
}

// How the reports show a token: the tokenizer's readable piece ("␣Paris"), or "#id" without a
// tokenizer or for an id it lacks (a model vocabulary padded past the tokenizer's).
inline PieceFn piece_fn(const tok::Tokenizer* t) {
  return [t](int32_t id) -> std::string {
    try {
      if (t) return t->token_display(id);
    } catch (const std::exception&) {
    }
    return id_piece(id);
  };
}

}  // namespace lmscope::cli
