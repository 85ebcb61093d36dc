#include "tokenizer/decoder.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace lmscope::tok {

TokenDecoder TokenDecoder::from_json(const Field& f) {
  TokenDecoder d;
  if (f.is_null()) return d;
  f.expect_object();
  Field type_f = f.at("type");
  std::string type = type_f.str();
  if (type == "ByteLevel") {
    d.byte_level_ = true;
  } else if (type == "Sequence") {
    // Accept a Sequence that is exactly one ByteLevel.
    Field list = f.at("decoders");
    list.expect_array();
    if (list.size() != 1 || list.at(0).at("type").str() != "ByteLevel")
      list.fail("only a Sequence holding one ByteLevel decoder is supported");
    d.byte_level_ = true;
  } else {
    type_f.fail("unsupported decoder '" + type + "' (supported: ByteLevel)");
  }
  return d;
}

std::string TokenDecoder::token_bytes(const std::string& token) const {
  if (!byte_level_) return token;
  std::string out;
  if (!byte_level::decode(token, out)) return token;
  return out;
}

std::string TokenDecoder::decode(const std::vector<const std::string*>& tokens) const {
  std::string bytes;
  if (!byte_level_) {
    // HF with no decoder: the tokens joined by a space.
    for (size_t i = 0; i < tokens.size(); ++i) bytes += (i ? " " : "") + *tokens[i];
    return bytes;
  }
  for (const std::string* t : tokens)
    if (!byte_level::decode(*t, bytes)) bytes += *t;
  return utf8::lossy(bytes);
}

std::string IncrementalDecoder::push(int32_t id) {
  bytes_of_(id, pending_);
  size_t n = utf8::emittable_prefix(pending_);
  if (n == 0) return std::string();
  std::string out = utf8::lossy(std::string_view(pending_).substr(0, n));
  pending_.erase(0, n);
  return out;
}

std::string IncrementalDecoder::finish() {
  std::string out = utf8::lossy(pending_);
  pending_.clear();
  return out;
}

}  // namespace lmscope::tok
