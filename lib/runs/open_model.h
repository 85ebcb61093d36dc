// A model opened to run: its weights, a backend, the forward, its special tokens, its tokenizer,
// and the run context (runs/run.h) pointing at them. What every tool loads (tools/model_args.h
// adds the command line's prompts) and what the Python module's lmscope.Model holds. Prompts
// given as text or ids are checked here too, once for both.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/load_model.h"
#include "model/special_tokens.h"
#include "runs/run.h"
#include "tokenizer/encode_trace.h"
#include "tokenizer/tokenizer.h"

namespace lmscope {

struct ModelOptions {
  std::string path;                  // a Hugging Face directory or a .gguf file (load_model)
  std::string backend = "cpu";       // cpu, cuda or auto (make_backend)
  std::string dtype = "f32";
  std::string cpu_activations = "f32";
  int pad_override = -1;             // >= 0: the pad id, whatever the model's files say
};

struct OpenModel {
  OpenModel() = default;
  OpenModel(const OpenModel&) = delete;   // nor movable: ctx points into it
  OpenModel& operator=(const OpenModel&) = delete;

  LoadedModel loaded;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Decoder> decoder;
  SpecialTokens special;
  std::optional<tok::Tokenizer> tokenizer;
  ModelContext ctx;
};

// The model's tokenizer: a tokenizer.json beside a model directory, or a .gguf file's
// tokenizer.ggml.* metadata; nullopt when it has none.
std::optional<tok::Tokenizer> load_model_tokenizer(const std::string& model_path);

// Opens o.path into `m` in place (m.ctx points into m: do not move it afterwards). `command_line`
// is what the traces record, `producer` who wrote them ("lmscope 0.1.0").
void open_model(OpenModel& m, const ModelOptions& o, const std::string& command_line, const std::string& producer);

// A prompt given as text, encoded by the model's tokenizer (its merges kept in `et`). Throws
// std::invalid_argument "<what> '<text>' encodes to no tokens" for a text that makes no tokens.
std::vector<int32_t> encode_prompt(const tok::Tokenizer& tokenizer, const std::string& text, bool add_special,
                                   EncodeTrace& et, const std::string& what);

// Every id of a prompt inside the vocabulary, and at least one. Throws std::invalid_argument
// naming the first id outside it ("token id 5000 is outside the vocabulary (1024)").
void check_prompt_ids(const std::vector<int32_t>& ids, int64_t vocab_size);

}  // namespace lmscope
