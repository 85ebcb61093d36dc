// The tokenizer a GGUF file carries as metadata (llama.cpp's tokenizer.ggml.* keys), turned
// into the tokenizer.json + tokenizer_config.json that describe the same tokenizer, so that
// Tokenizer::from_gguf runs exactly the pipeline a tokenizer.json would (docs/tokenizer.md,
// "GGUF"):
//
//   tokenizer.ggml.model        "gpt2" (byte-level BPE) only; "llama" (SentencePiece) etc. refused
//   tokenizer.ggml.tokens       model.vocab: token i has id i
//   tokenizer.ggml.merges       model.merges, "a b" strings, in rank order
//   tokenizer.ggml.token_type   3 (control) -> special added token; 4 (user-defined) -> added
//                               token that is not special; others stay plain vocabulary
//   tokenizer.ggml.pre          the normalizer + pre-tokenizer the name stands for (table below)
//   tokenizer.ggml.{bos,eos,unknown,padding}_token_id   bos_token, eos_token, unk_token, pad_token
//   tokenizer.ggml.add_bos_token / add_eos_token        TemplateProcessing around the sequence
//   tokenizer.chat_template     chat_template
//
// `pre` names (llama.cpp's, from convert_hf_to_gguf's tokenizer hashes):
//   smollm                        Sequence[Digits(individual), ByteLevel(GPT-2 regex)]   SmolLM/SmolLM2
//   gpt2, gpt-2, default, absent  ByteLevel(GPT-2 regex)
//   qwen2, deepseek-r1-qwen       NFC; Sequence[Split(Qwen2 regex), ByteLevel(no regex)]
//   llama-bpe, llama3, llama-v3   Sequence[Split(Llama 3 regex), ByteLevel(no regex)], ignore_merges
// Any other name is refused with the key and the value in the message.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lmscope {
class GgufFile;
}

namespace lmscope::tok {

struct GgufTokenizerSpec {
  nlohmann::json tokenizer_json;   // as a tokenizer.json: model, added_tokens, normalizer, pre_tokenizer, post_processor, decoder
  nlohmann::json config;           // as a tokenizer_config.json: bos/eos/unk/pad_token, chat_template
  std::string pre;                 // tokenizer.ggml.pre as written ("" when absent)
};

// Reads and checks the tokenizer.ggml.* keys. Errors are one line that starts with the file's
// path and names the key (and the element, for an array):
//   "m.gguf: key 'tokenizer.ggml.pre' is 'falcon': no pre-tokenizer known for it (supported: ...)"
//   "m.gguf: key 'tokenizer.ggml.merges' [12] 'a b c': expected two tokens separated by one space"
GgufTokenizerSpec gguf_tokenizer_spec(const GgufFile& f);

// What a tokenizer.ggml.pre name (one of gguf_supported_pre_names) stands for, as tokenizer.json
// members: {"normalizer": ..., "pre_tokenizer": ..., "ignore_merges": bool}. Throws for another name.
nlohmann::json gguf_pre_tokenizer(const std::string& pre);

// The tokenizer.json "model" member of a byte-level BPE (no unk, no prefixes, no dropout, no
// byte fallback), as gguf_tokenizer_spec and the BPE trainer (bpe_train.h) write it.
nlohmann::json bpe_model_json(nlohmann::json vocab, nlohmann::json merges, bool ignore_merges);

// The tokenizer.ggml.pre values gguf_tokenizer_spec accepts.
const std::vector<std::string>& gguf_supported_pre_names();

}  // namespace lmscope::tok
