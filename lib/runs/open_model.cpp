#include "runs/open_model.h"

#include <filesystem>
#include <stdexcept>

namespace lmscope {

std::optional<tok::Tokenizer> load_model_tokenizer(const std::string& model_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(model_path, ec) && fs::exists(fs::path(model_path) / "tokenizer.json", ec))
    return tok::Tokenizer::load(model_path);
  if (is_gguf_path(model_path)) return tok::Tokenizer::load(model_path);   // tokenizer.ggml.* metadata
  return std::nullopt;
}

void open_model(OpenModel& m, const ModelOptions& o, const std::string& command_line, const std::string& producer) {
  m.loaded = load_model(o.path);
  m.backend = make_backend(o.backend, o.dtype, o.cpu_activations);
  m.decoder = std::make_unique<Decoder>(m.loaded.cfg, m.loaded.weights, *m.backend);
  m.special = resolve_special_tokens(m.loaded.cfg, o.path);
  if (o.pad_override >= 0) m.special.pad_id = o.pad_override;
  m.tokenizer = load_model_tokenizer(o.path);
  m.ctx.decoder = m.decoder.get();
  m.ctx.model_path = o.path;
  m.ctx.command_line = command_line;
  m.ctx.producer = producer;
  if (m.tokenizer) m.ctx.tokenizer = &*m.tokenizer;
}

std::vector<int32_t> encode_prompt(const tok::Tokenizer& tokenizer, const std::string& text, bool add_special,
                                   EncodeTrace& et, const std::string& what) {
  std::vector<int32_t> ids = tokenizer.encode(text, add_special, &et);
  if (ids.empty()) throw std::invalid_argument(what + " '" + text + "' encodes to no tokens");
  return ids;
}

void check_prompt_ids(const std::vector<int32_t>& ids, int64_t vocab_size) {
  if (ids.empty()) throw std::invalid_argument("a prompt of no ids");
  for (int32_t id : ids)
    if (id < 0 || id >= vocab_size)
      throw std::invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary (" +
                                  std::to_string(vocab_size) + ")");
}

}  // namespace lmscope
