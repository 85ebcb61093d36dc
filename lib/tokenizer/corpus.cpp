#include "tokenizer/corpus.h"

#include <utf8proc.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "io/json_error.h"
#include "io/regular_file.h"

namespace lmscope {

namespace {

bool corpus_line_blank(std::string_view s) { return s.find_first_not_of(" \t\r\n\v\f") == std::string_view::npos; }

// The byte offset of the first byte that is not UTF-8, or npos.
size_t corpus_first_invalid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    utf8proc_int32_t cp;
    const utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                                utf8proc_ssize_t(s.size() - i), &cp);
    if (n <= 0) return i;
    i += size_t(n);
  }
  return std::string_view::npos;
}

std::vector<int32_t> corpus_id_line(std::string_view line, int64_t vocab_size) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < line.size()) {
    const size_t start = line.find_first_not_of(" \t\r\n\v\f,", i);
    if (start == std::string_view::npos) break;
    size_t end = line.find_first_of(" \t\r\n\v\f,", start);
    if (end == std::string_view::npos) end = line.size();
    const std::string word(line.substr(start, end - start));
    if (word.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument("'" + word + "' is not a token id");
    // More than nine digits is past any vocabulary (and past int32).
    if (word.size() > 9 || (vocab_size >= 0 && std::stoll(word) >= vocab_size))
      throw std::invalid_argument("token id " + word + " is outside the vocabulary (" +
                                  (vocab_size >= 0 ? std::to_string(vocab_size) : std::string("int32")) + ")");
    ids.push_back(int32_t(std::stoll(word)));
    i = end;
  }
  return ids;
}

}  // namespace

CorpusKind corpus_kind(const std::string& path, const std::string& kind) {
  if (kind == "text") return CorpusKind::Text;
  if (kind == "jsonl") return CorpusKind::Jsonl;
  if (kind == "ids") return CorpusKind::Ids;
  if (kind != "auto") throw std::runtime_error("unknown corpus format '" + kind + "' (one of: auto, text, jsonl, ids)");
  const size_t dot = path.find_last_of("./");
  std::string ext = dot == std::string::npos || path[dot] == '/' ? "" : path.substr(dot);
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".jsonl" || ext == ".json") return CorpusKind::Jsonl;
  if (ext == ".ids") return CorpusKind::Ids;
  return CorpusKind::Text;
}

std::optional<CorpusDocument> corpus_document(std::string_view line, CorpusKind kind, const std::string& field,
                                              int64_t vocab_size) {
  const size_t bad = corpus_first_invalid_utf8(line);
  if (bad != std::string_view::npos) throw std::invalid_argument("invalid UTF-8 at byte " + std::to_string(bad) + " of the line");
  if (corpus_line_blank(line)) return std::nullopt;
  CorpusDocument d;
  if (kind == CorpusKind::Text) {
    d.text = std::string(line);
  } else if (kind == CorpusKind::Jsonl) {
    nlohmann::json obj;
    try {
      obj = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      throw std::invalid_argument("not JSON (" + json_error_text(e) + ")");
    }
    if (!obj.is_object() || !obj.contains(field)) throw std::invalid_argument("no field '" + field + "' in this JSON line");
    if (!obj[field].is_string())
      throw std::invalid_argument("the field '" + field + "' holds a JSON " + json_kind(obj[field]) + ", not a string");
    d.text = obj[field].get<std::string>();
    if (corpus_line_blank(d.text)) return std::nullopt;
  } else {
    d.ids = corpus_id_line(line, vocab_size);
  }
  return d;
}

Corpus read_corpus(const std::string& path, CorpusKind kind, const std::string& field, int64_t vocab_size) {
  require_regular_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read the corpus '" + path + "'");
  Corpus c;
  std::string line;
  for (int64_t index = 0; std::getline(in, line); ++index) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    ++c.lines;
    std::optional<CorpusDocument> d;
    try {
      d = corpus_document(line, kind, field, vocab_size);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(path + ":" + std::to_string(index + 1) + ": " + e.what());
    }
    if (!d) {
      ++c.blank_lines;
      continue;
    }
    d->doc = index;
    c.documents.push_back(std::move(*d));
  }
  if (in.bad()) throw std::runtime_error("cannot read the corpus '" + path + "'");
  if (c.documents.empty())
    throw std::runtime_error(path + ": no documents (" + std::to_string(c.lines) + " lines, all blank)");
  return c;
}

}  // namespace lmscope
