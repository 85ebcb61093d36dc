#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace lmscope::tok {

namespace {

void collect(const Field& f, std::vector<Normalizer::Form>& out, int depth = 0) {
  f.expect_object();
  std::string type = f.at("type").str();
  if (type == "NFC") out.push_back(Normalizer::Form::NFC);
  else if (type == "NFD") out.push_back(Normalizer::Form::NFD);
  else if (type == "NFKC") out.push_back(Normalizer::Form::NFKC);
  else if (type == "NFKD") out.push_back(Normalizer::Form::NFKD);
  else if (type == "Sequence") {
    check_sequence_depth(f, depth + 1);
    Field list = f.at("normalizers");
    list.expect_array();
    for (size_t i = 0; i < list.size(); ++i) collect(list.at(i), out, depth + 1);
  } else {
    f.at("type").fail("unsupported normalizer '" + type + "' (supported: NFC, NFD, NFKC, NFKD, Sequence)");
  }
}

bool is_ascii(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

std::string run(std::string_view text, Normalizer::Form form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case Normalizer::Form::NFC: options |= UTF8PROC_COMPOSE; break;
    case Normalizer::Form::NFD: options |= UTF8PROC_DECOMPOSE; break;
    case Normalizer::Form::NFKC: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case Normalizer::Form::NFKD: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  utf8proc_uint8_t* out = nullptr;
  // An explicit length (no UTF8PROC_NULLTERM): U+0000 inside the text is a character.
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                    utf8proc_ssize_t(text.size()), &out, utf8proc_option_t(options));
  if (n < 0) throw std::runtime_error(std::string("Unicode normalization failed: ") + utf8proc_errmsg(n));
  std::string s(reinterpret_cast<const char*>(out), size_t(n));
  std::free(out);
  return s;
}

const char* name(Normalizer::Form f) {
  switch (f) {
    case Normalizer::Form::NFC: return "NFC";
    case Normalizer::Form::NFD: return "NFD";
    case Normalizer::Form::NFKC: return "NFKC";
    case Normalizer::Form::NFKD: return "NFKD";
  }
  return "?";
}

}  // namespace

Normalizer Normalizer::from_json(const Field& f) {
  std::vector<Form> steps;
  if (!f.is_null()) collect(f, steps);
  return Normalizer(std::move(steps));
}

std::string Normalizer::apply(std::string_view text) const {
  if (steps_.empty() || is_ascii(text)) return std::string(text);
  std::string s(text);
  for (Form f : steps_) s = run(s, f);
  return s;
}

std::string_view Normalizer::apply(std::string_view text, std::string& storage) const {
  if (steps_.empty() || is_ascii(text)) return text;
  storage = apply(text);
  return storage;
}

std::string Normalizer::describe() const {
  if (steps_.empty()) return "none";
  std::string s;
  for (Form f : steps_) s += (s.empty() ? "" : ", ") + std::string(name(f));
  return s;
}

}  // namespace lmscope::tok
