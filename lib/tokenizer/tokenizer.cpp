#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "io/gguf.h"
#include "io/json_error.h"
#include "io/regular_file.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/sentencepiece.h"
#include "tokenizer/utf8.h"

namespace lmscope::tok {

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p, const std::string& what) {
  require_regular_file(p.string());
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + what + " '" + p.string() + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json parse_json(const std::string& text, const std::string& label) {
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw std::runtime_error(label + ": not valid JSON: " + json_error_text(e));
  }
}

// tokenizer_config.json writes a special token as "text", {"content": "text", ...} or null.
std::optional<std::string> config_token(const Field& config, const std::string& key) {
  auto f = config.get(key);
  if (!f) return std::nullopt;
  if (f->json().is_string()) return f->str();
  if (f->json().is_object()) return f->at("content").str();
  f->fail("expected a token string or {\"content\": ...}, got " + json_kind(f->json()));
}

// "chat_template": a string, or a list of {"name", "template"} (the "default" one is used).
std::string config_chat_template(const Field& config) {
  auto f = config.get("chat_template");
  if (!f) return "";
  if (f->json().is_string()) return f->str();
  if (!f->json().is_array()) f->fail("expected a string or a list of {name, template}, got " + json_kind(f->json()));
  for (size_t i = 0; i < f->size(); ++i) {
    Field entry = f->at(i);
    if (entry.at("name").str() == "default") return entry.at("template").str();
  }
  f->fail("no template named \"default\" in the list");
}

}  // namespace

Tokenizer Tokenizer::load(const std::string& path_or_dir) {
  fs::path p(path_or_dir);
  std::error_code ec;
  fs::path file, dir;
  if (fs::is_directory(p, ec)) {
    dir = p;
    file = p / "tokenizer.json";
    if (!fs::exists(file, ec)) throw std::runtime_error("no tokenizer.json in directory '" + p.string() + "'");
  } else if (fs::exists(p, ec)) {
    // The tokenizer is all metadata: a GGUF cut after its header (no tensor data) will do.
    if (is_gguf_file(p.string())) return from_gguf(GgufFile::open(p.string(), GgufOpen::MetadataOnly));
    file = p;
    dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  } else {
    throw std::runtime_error("tokenizer '" + p.string() + "' does not exist (give a directory, a tokenizer.json or a .gguf)");
  }
  nlohmann::json tj = parse_json(read_file(file, "tokenizer"), file.string());
  nlohmann::json config;
  fs::path config_path = dir / "tokenizer_config.json";
  if (fs::exists(config_path, ec)) config = parse_json(read_file(config_path, "tokenizer config"), config_path.string());
  Tokenizer t = from_json(tj, file.string(), config, config_path.string());
  // transformers 5 saves the template as chat_template.jinja; it wins over the config's.
  fs::path jinja = dir / "chat_template.jinja";
  if (fs::exists(jinja, ec)) t.chat_template_ = read_file(jinja, "chat template");
  return t;
}

Tokenizer Tokenizer::from_json(const nlohmann::json& tj, const std::string& label, const nlohmann::json& config,
                               const std::string& config_label) {
  Field root(tj, label);
  root.expect_object();
  for (const char* unsupported : {"truncation", "padding"})
    if (root.has(unsupported)) root.at(unsupported).fail("not supported (lmscope never truncates or pads in the tokenizer; set it to null)");

  Tokenizer t;
  t.source_ = label;
  t.normalizer_ = Normalizer::from_json(root.at_or_null("normalizer"));
  t.pre_tokenizer_ = PreTokenizer::from_json(root.at_or_null("pre_tokenizer"));
  t.bpe_ = Bpe::from_json(root.at("model"));
  const Normalizer& norm = t.normalizer_;
  t.added_ = AddedTokens::from_json(root.at_or_null("added_tokens"), [&norm](const std::string& s) { return norm.apply(s); });
  t.post_ = PostProcessor::from_json(root.at_or_null("post_processor"));
  t.decoder_ = TokenDecoder::from_json(root.at_or_null("decoder"));

  t.vocab_size_ = std::max(t.bpe_.vocab_size(), t.added_.max_id() + 1);
  for (const AddedToken& a : t.added_.tokens())
    if (a.special) {
      t.special_contents_.insert(a.content);
      t.special_contents_.insert(a.text);
    }
  for (const auto* items : {&t.post_.before(), &t.post_.after()})
    for (const auto& item : *items)
      for (int32_t id : item.ids)
        if (!t.added_.by_id(id) && !t.bpe_.id_to_token(id))
          root.at("post_processor").fail("special token '" + item.name + "' has id " + std::to_string(id) + ", which is not in the vocabulary");

  if (!config.is_null()) {
    Field c(config, config_label);
    c.expect_object();
    for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
      auto s = config_token(c, key);
      if (!s) continue;
      t.special_strings_[key] = *s;
      auto id = t.token_to_id(*s);
      if (!id) c.at(key).fail("'" + *s + "' is not a token of " + label);
      if (std::string(key) == "bos_token") t.bos_id_ = *id;
      if (std::string(key) == "eos_token") t.eos_id_ = *id;
      if (std::string(key) == "pad_token") t.pad_id_ = *id;
    }
    t.chat_template_ = config_chat_template(c);
  }
  return t;
}

Tokenizer Tokenizer::from_sentencepiece(SpmVocab vocab, const std::string& label) {
  Tokenizer t;
  t.source_ = label;
  t.vocab_size_ = int32_t(vocab.pieces.size());
  for (const auto& [key, id] : std::vector<std::pair<std::string, int>>{
           {"bos_token", vocab.bos}, {"eos_token", vocab.eos}, {"unk_token", vocab.unk}, {"pad_token", vocab.pad}})
    if (id >= 0) t.special_strings_[key] = vocab.pieces[size_t(id)];
  t.bos_id_ = vocab.bos;
  t.eos_id_ = vocab.eos;
  t.pad_id_ = vocab.pad;
  for (int id = 0; id < t.vocab_size_; ++id)
    if (vocab.is_control(id)) t.special_contents_.insert(std::string(vocab.pieces[size_t(id)]));
  t.chat_template_ = vocab.chat_template;
  t.spm_ = std::make_shared<const SpmVocab>(std::move(vocab));
  return t;
}

// ---- encoding ---------------------------------------------------------------------------

void Tokenizer::encode_text(std::string_view piece, std::vector<int32_t>& ids, EncodeTrace* trace) const {
  thread_local std::vector<std::string_view> words;
  thread_local std::deque<std::string> arena;   // prefix spaces (ByteLevel add_prefix_space) live here
  words.clear();
  arena.clear();
  pre_tokenizer_.split(piece, words, arena);
  const bool byte_level = pre_tokenizer_.byte_level();
  if (!trace) {
    for (std::string_view w : words) bpe_.encode_word(w, byte_level, ids);
    return;
  }
  for (std::string_view w : words) {
    WordTrace wt;
    wt.kind = WordTrace::Kind::Bpe;
    wt.text = std::string(w);
    bpe_.encode_word(w, byte_level, ids, &wt);
    trace->words.push_back(std::move(wt));
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, EncodeTrace* trace) const {
  utf8::check(text, "input text");
  if (spm_) {
    const std::vector<int> ids = spm_encode(*spm_, std::string(text), add_special && spm_->add_bos, trace);
    return std::vector<int32_t>(ids.begin(), ids.end());
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (trace) {
    trace->clear();
    trace->text = std::string(text);
  }
  auto add_token = [&](int32_t id, WordTrace::Kind kind, std::string_view shown) {
    ids.push_back(id);
    if (!trace) return;
    WordTrace wt;
    wt.kind = kind;
    wt.text = std::string(shown);
    wt.ids = {id};
    trace->words.push_back(std::move(wt));
  };
  auto add_post = [&](const std::vector<PostProcessor::Item>& items) {
    for (const auto& item : items)
      for (int32_t id : item.ids) add_token(id, WordTrace::Kind::Post, token_text(id));
  };
  if (add_special) add_post(post_.before());

  thread_local std::vector<TextPiece> raw, normalized_pieces;   // encode never calls itself
  raw.clear();
  added_.split(text, /*normalized_pass=*/false, raw);
  std::string storage;
  for (const TextPiece& piece : raw) {
    if (piece.token >= 0) {
      add_token(piece.token, WordTrace::Kind::Added, piece.text);
      continue;
    }
    std::string_view norm = normalizer_.apply(piece.text, storage);
    if (!added_.has_normalized()) {
      if (!norm.empty()) encode_text(norm, ids, trace);
      continue;
    }
    normalized_pieces.clear();
    added_.split(norm, /*normalized_pass=*/true, normalized_pieces);
    for (const TextPiece& sub : normalized_pieces) {
      if (sub.token >= 0) add_token(sub.token, WordTrace::Kind::Added, sub.text);
      else encode_text(sub.text, ids, trace);
    }
  }

  if (add_special) add_post(post_.after());
  if (trace) trace->ids = ids;
  return ids;
}

// ---- decoding ---------------------------------------------------------------------------

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (spm_) {
    const int id = spm_->id_of(token);
    if (id < 0) return std::nullopt;
    return id;
  }
  if (const AddedToken* a = added_.by_content(token)) return a->id;
  return bpe_.token_to_id(token);
}

std::string Tokenizer::token_text(int32_t id) const {
  if (spm_ && id >= 0 && id < vocab_size_) return std::string(spm_->pieces[size_t(id)]);
  if (const AddedToken* a = added_.by_id(id)) return a->text;
  if (const std::string* s = bpe_.id_to_token(id)) return *s;
  throw std::out_of_range("token id " + std::to_string(id) + " is not in the vocabulary (ids 0.." +
                          std::to_string(vocab_size_ - 1) + ")");
}

bool Tokenizer::is_added(int32_t id) const {
  if (spm_) {   // matched whole in the text: control and user-defined tokens
    if (id < 0 || id >= int32_t(spm_->types.size())) return false;
    const int type = spm_->types[size_t(id)];
    return type == kControl || type == kUserDefined;
  }
  return added_.by_id(id) != nullptr;
}

bool Tokenizer::is_special(int32_t id) const {
  if (spm_) return spm_->is_control(id);
  if (const AddedToken* a = added_.by_id(id)) return a->special;
  const std::string* s = bpe_.id_to_token(id);
  return s && special_contents_.count(*s);
}

std::string Tokenizer::token_bytes(int32_t id) const {
  if (spm_) {
    token_text(id);   // an id outside the vocabulary throws, as for BPE
    return spm_->token_bytes(id);
  }
  return decoder_.token_bytes(token_text(id));
}

std::string Tokenizer::token_display(int32_t id) const { return utf8::readable(token_bytes(id)); }

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  if (spm_) {   // the bytes of each token, then one lossy UTF-8 pass (llama.cpp's detokenize)
    std::string bytes;
    for (int32_t id : ids)
      if (!(skip_special && is_special(id))) bytes += token_bytes(id);
    return utf8::lossy(bytes);
  }
  std::vector<std::string> texts;   // token_text gives a copy: kept here for the pointers below
  texts.reserve(ids.size());
  for (int32_t id : ids) {
    std::string s = token_text(id);
    // HF checks the token's text against the special added tokens.
    if (skip_special && special_contents_.count(s)) continue;
    texts.push_back(std::move(s));
  }
  std::vector<const std::string*> tokens;
  tokens.reserve(texts.size());
  for (const std::string& s : texts) tokens.push_back(&s);
  return decoder_.decode(tokens);
}

IncrementalDecoder Tokenizer::incremental_decoder(bool skip_special) const {
  if (spm_)
    return IncrementalDecoder([this, skip_special](int32_t id, std::string& out) {
      if (!(skip_special && is_special(id))) out += token_bytes(id);
    });
  if (!decoder_.byte_level()) throw std::runtime_error(source_ + ": incremental decoding needs a ByteLevel decoder");
  return IncrementalDecoder([this, skip_special](int32_t id, std::string& out) {
    const std::string& s = token_text(id);
    if (skip_special && special_contents_.count(s)) return;
    out += decoder_.token_bytes(s);
  });
}

std::string Tokenizer::describe() const {
  size_t n_special = 0;
  for (const AddedToken& a : added_.tokens()) n_special += a.special;
  auto id_str = [this](int32_t id) { return id < 0 ? std::string("none") : std::to_string(id) + " " + token_text(id); };
  std::ostringstream s;
  if (spm_) {
    size_t n_bytes = 0;
    for (int b : spm_->byte_ids) n_bytes += b >= 0;
    s << "model:          SentencePiece BPE (GGUF 'llama'), " << vocab_size_ << " ids, merged by score\n"
      << "whole tokens:   " << spm_->whole_tokens.size() << " (control and user-defined, cut out first; "
      << special_contents_.size() << " control = special)\n"
      << "spaces:         '\xE2\x96\x81' (U+2581)" << (spm_->add_space_prefix ? ", a space put before the text" : "") << "\n"
      << "byte fallback:  " << n_bytes << " <0xNN> tokens\n"
      << "post-processor: " << (spm_->add_bos && bos_id_ >= 0 ? "BOS first (add_bos_token)" : "none") << "\n"
      << "bos / eos / pad: " << id_str(bos_id_) << " / " << id_str(eos_id_) << " / " << id_str(pad_id_) << "\n"
      << "chat template:  " << (chat_template_.empty() ? "none" : std::to_string(chat_template_.size()) + " characters")
      << "\n";
    return s.str();
  }
  s << "model:          BPE, " << bpe_.vocab_size() << " ids, " << bpe_.merge_count() << " merges"
    << (bpe_.ignore_merges() ? ", ignore_merges" : "") << "\n"
    << "added tokens:   " << added_.tokens().size() << " (" << n_special << " special)\n"
    << "normalizer:     " << normalizer_.describe() << "\n"
    << "pre-tokenizer:  " << pre_tokenizer_.describe() << "\n"
    << "post-processor: " << post_.describe() << "\n"
    << "decoder:        " << decoder_.describe() << "\n"
    << "bos / eos / pad: " << id_str(bos_id_) << " / " << id_str(eos_id_) << " / " << id_str(pad_id_) << "\n"
    << "chat template:  " << (chat_template_.empty() ? "none" : std::to_string(chat_template_.size()) + " characters")
    << "\n";
  return s.str();
}

}  // namespace lmscope::tok
