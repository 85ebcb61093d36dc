// The model and prompt options shared by the experiment tools (lmscope-padding, lmscope-cache):
// a model path (whatever load_model takes), prompts as token ids or as text encoded by the
// model's tokenizer, optionally wrapped in the chat template.
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

#include "backend/backend.h"
#include "runs/run.h"
#include "model/load_model.h"
#include "model/special_tokens.h"
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
    app.add_option("--chat-format", chat_format, "template (the tokenizer's own), chatml or deepseek-r1")
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

struct ToolModel {
  ToolModel() = default;
  ToolModel(const ToolModel&) = delete;   // nor movable: ctx points into it
  ToolModel& operator=(const ToolModel&) = delete;

  LoadedModel loaded;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Decoder> decoder;
  SpecialTokens special;
  std::optional<tok::Tokenizer> tokenizer;
  ModelContext ctx;
  std::vector<std::vector<int32_t>> prompts;   // in the order: --prompt-ids, then --prompt
  std::vector<std::string> prompt_texts;       // text for display ("" where only ids were given)
};

// The model's tokenizer, when the model directory holds a tokenizer.json.
// or, for a .gguf file, the tokenizer in its metadata.
inline std::optional<tok::Tokenizer> load_tool_tokenizer(const std::string& model_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(model_path, ec) && fs::exists(fs::path(model_path) / "tokenizer.json", ec))
    return tok::Tokenizer::load(model_path);
  if (is_gguf_path(model_path)) return tok::Tokenizer::load(model_path);   // tokenizer.ggml.* metadata
  return std::nullopt;
}

// Loads a.model into `m` in place (m.ctx points into m: do not move it afterwards) and encodes
// the prompts; `cmd` is the command line the traces record. The experiment tests call it too.
inline void load_tool_model_into(ToolModel& m, const ModelArgs& a, const std::string& cmd, bool need_prompts = true) {
  m.loaded = load_model(a.model);
  m.backend = make_backend(a.backend, a.dtype, a.cpu_activations);
  m.decoder = std::make_unique<Decoder>(m.loaded.cfg, m.loaded.weights, *m.backend);
  m.special = resolve_special_tokens(m.loaded.cfg, a.model);
  if (a.pad_override >= 0) m.special.pad_id = a.pad_override;
  m.tokenizer = load_tool_tokenizer(a.model);
  m.ctx.decoder = m.decoder.get();
  m.ctx.model_path = a.model;
  m.ctx.command_line = cmd;
  m.ctx.producer = std::string("lmscope ") + LMSCOPE_VERSION;
  if (m.tokenizer) m.ctx.tokenizer = &*m.tokenizer;
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
    m.prompts.push_back(m.tokenizer->encode(text, !a.chat, &et));
    m.ctx.encodings.push_back(std::move(et));
    if (m.prompts.back().empty()) throw std::runtime_error("--prompt '" + p + "' encodes to no tokens");
    m.prompt_texts.push_back(p);
  }
  if (need_prompts && m.prompts.empty()) throw std::runtime_error("no prompt: give --prompt-ids or --prompt");
  for (const auto& p : m.prompts)
    for (int32_t id : p)
      if (id >= m.loaded.cfg.vocab_size)
        throw std::runtime_error("token id " + std::to_string(id) + " is outside the vocabulary (" +
                                 std::to_string(m.loaded.cfg.vocab_size) + ")");
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
