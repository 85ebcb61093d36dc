// The documents of a corpus, one per line (docs/collect.md, "Options": --format): the one reader behind
// lmscope-collect / lmscope.collect (python/lmscope/corpus.py calls corpus_document through
// lmscope._core) and lmscope-score --data. Three kinds:
//   text   a line of UTF-8 text is a document;
//   jsonl  a line is a JSON object and the document is its string field (default "text");
//   ids    a line is token ids separated by spaces or commas (e.g. "1, 504, 2289").
// A document's id is its line's index in the file (0-based). Blank lines (nothing but
// whitespace, or a JSONL field that is) are no documents: skipped and counted. Anything else
// that cannot be read is refused with one line "FILE:LINE: what is wrong".
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lmscope {

enum class CorpusKind { Text, Jsonl, Ids };

// "text", "jsonl", "ids", or "auto": the file name's (.jsonl/.json: jsonl, .ids: ids, else
// text). Throws one line for another word.
CorpusKind corpus_kind(const std::string& path, const std::string& kind);

struct CorpusDocument {
  int64_t doc = 0;                  // the line's index in the file (0-based)
  std::string text;                 // text and jsonl
  std::vector<int32_t> ids;         // ids
};

// One line (without its end of line) as a document, std::nullopt for a blank line. Throws
// std::invalid_argument with what is wrong, without the place ("invalid UTF-8 at byte 4 of the
// line"). vocab_size < 0: ids are not checked against a vocabulary.
std::optional<CorpusDocument> corpus_document(std::string_view line, CorpusKind kind, const std::string& field,
                                              int64_t vocab_size);

struct Corpus {
  std::vector<CorpusDocument> documents;
  int64_t lines = 0, blank_lines = 0;
};

// The whole file. Throws std::runtime_error "FILE:LINE: ..." at the first bad line, and
// "FILE: no documents (N lines, all blank)".
Corpus read_corpus(const std::string& path, CorpusKind kind, const std::string& field, int64_t vocab_size);

}  // namespace lmscope
