// A byte-level BPE tokenizer loaded from a Hugging Face tokenizer.json, exact against HF
// tokenizers (docs/tokenizer.md). encode() runs HF's pipeline:
//
//   text --(added tokens with normalized=false cut out of the raw text)-->
//        --(normalizer on the pieces between them; then normalized=true added tokens)-->
//        --(pre-tokenizer: words)--> --(BPE merges per word, cached)--> ids
//        --(post-processor: BOS/EOS when add_special)--> ids
//
//   Tokenizer t = Tokenizer::load("golden/tokenizers/qwen-bpe");
//   t.encode("中华人民共和国成立于 1949 年。")   // -> 11 ids: 中华人民 共和国 成立于 " " 1 9 4 9 ...
//
// A GGUF file whose tokenizer.ggml.model is "llama" (Gemma 3) carries a SentencePiece BPE
// instead: the Tokenizer then runs tokenizer/sentencepiece.h (merges by score, "▁" for spaces,
// byte fallback) behind the same interface.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoder.h"
#include "tokenizer/encode_trace.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"

namespace lmscope {
class GgufFile;
}

namespace lmscope::tok {

struct SpmVocab;

class Tokenizer {
 public:
  // A directory (tokenizer.json, plus tokenizer_config.json and chat_template.jinja when
  // present), a tokenizer.json file (tokenizer_config.json beside it is read if present), or
  // a .gguf file (any file that starts with "GGUF": from_gguf).
  // Errors are one line naming the file and, for a bad field, the field:
  //   "<dir>/tokenizer.json: model.merges[12]: token 'xy' is not in the vocabulary"
  static Tokenizer load(const std::string& path_or_dir);
  // The tokenizer of a GGUF file's tokenizer.ggml.* metadata: byte-level BPE ("gpt2") built as
  // the equivalent tokenizer.json would be (lib/tokenizer/gguf_tokenizer.h), or SentencePiece
  // ("llama", from_sentencepiece); errors name the key.
  static Tokenizer from_gguf(const GgufFile& file);
  // A SentencePiece vocabulary (tokenizer/sentencepiece.h): encode adds BOS when add_special and
  // the file's add_bos_token say so; control tokens are the special ones; decode turns "▁" into
  // a space and "<0xNN>" into its byte. `label` names the source in errors.
  static Tokenizer from_sentencepiece(SpmVocab vocab, const std::string& label);
  // From parsed JSON; `label` names the source in errors. `config` is tokenizer_config.json
  // (null if none).
  static Tokenizer from_json(const nlohmann::json& tokenizer_json, const std::string& label,
                             const nlohmann::json& config = nullptr, const std::string& config_label = "");

  // Text -> ids. `text` must be valid UTF-8 (else std::runtime_error naming the byte
  // offset). add_special: let the post-processor add its tokens (HF's add_special_tokens).
  // With a trace, every word's merges are recorded (and the word cache is bypassed).
  std::vector<int32_t> encode(std::string_view text, bool add_special = true, EncodeTrace* trace = nullptr) const;

  // Ids -> text as HF decode does; skip_special drops special added tokens. An id outside
  // the vocabulary is an error (HF silently drops it).
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const;
  IncrementalDecoder incremental_decoder(bool skip_special = false) const;

  // One past the largest id (model vocabulary and added tokens).
  int32_t vocab_size() const { return vocab_size_; }
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The vocabulary string of an id ("Ġworld", "<|im_end|>"); throws for an unknown id.
  std::string token_text(int32_t id) const;
  // The bytes the id stands for (" world"), and those bytes shown readably (utf8::readable).
  std::string token_bytes(int32_t id) const;
  std::string token_display(int32_t id) const;
  bool is_special(int32_t id) const;
  bool is_added(int32_t id) const;
  bool is_sentencepiece() const { return spm_ != nullptr; }

  // From tokenizer_config.json ("bos_token" etc. resolved to ids); -1 when not set.
  int32_t bos_id() const { return bos_id_; }
  int32_t eos_id() const { return eos_id_; }
  int32_t pad_id() const { return pad_id_; }
  // Named special tokens that are set (bos_token, eos_token, unk_token, pad_token, ...):
  // what HF passes to chat templates.
  const std::map<std::string, std::string>& special_token_strings() const { return special_strings_; }
  // tokenizer_config.json "chat_template" (or chat_template.jinja); "" when none.
  const std::string& chat_template() const { return chat_template_; }

  const std::string& source() const { return source_; }
  // One line per component: model, normalizer, pre-tokenizer, post-processor, decoder (a
  // SentencePiece tokenizer: its model, whole tokens, BOS and decoding).
  std::string describe() const;
  const Bpe& model() const { return bpe_; }
  const AddedTokens& added_tokens() const { return added_; }

 private:
  void encode_text(std::string_view piece, std::vector<int32_t>& ids, EncodeTrace* trace) const;

  std::string source_;
  Bpe bpe_;
  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  AddedTokens added_;
  PostProcessor post_;
  TokenDecoder decoder_;
  std::unordered_set<std::string> special_contents_;
  int32_t vocab_size_ = 0;
  int32_t bos_id_ = -1, eos_id_ = -1, pad_id_ = -1;
  std::map<std::string, std::string> special_strings_;
  std::string chat_template_;
  std::shared_ptr<const SpmVocab> spm_;   // set: a SentencePiece tokenizer (bpe_ etc. unused)
};

}  // namespace lmscope::tok
