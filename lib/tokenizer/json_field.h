// A JSON value that knows where it sits ("model.merges[12]") so that every error about a
// tokenizer.json names the field: "<file>: model.vocab: expected an object, got array".
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace lmscope::tok {

class Field {
 public:
  Field(const nlohmann::json& v, std::string file, std::string path = "")
      : v_(&v), file_(std::move(file)), path_(std::move(path)) {}

  const nlohmann::json& json() const { return *v_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }

  bool is_null() const { return v_->is_null(); }
  // Present and not null.
  bool has(const std::string& key) const;
  // A required member: "missing" if absent (null is returned as a null Field).
  Field at(const std::string& key) const;
  // A member that may be absent: a null Field (with the member's path) when it is.
  Field at_or_null(const std::string& key) const;
  // An optional member: nullopt when absent or null.
  std::optional<Field> get(const std::string& key) const;
  Field at(size_t i) const;
  size_t size() const;   // array or object size

  // Typed reads; the wrong kind is "expected a string, got integer".
  std::string str() const;
  int64_t integer() const;
  bool boolean() const;
  double number() const;
  void expect_object() const;
  void expect_array() const;

  // Optional typed members with a default (absent or null -> default).
  bool bool_or(const std::string& key, bool def) const;
  std::string str_or(const std::string& key, const std::string& def) const;

  // "<file>: <path>: <what>" as std::runtime_error.
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::string child_path(const std::string& key) const;
  const nlohmann::json* v_;
  std::string file_;
  std::string path_;
};

// A Sequence (of normalizers, pre-tokenizers or post-processors) inside another one, at most
// this deep: HF's files use one level; one nested 100,000 deep would overflow the stack of the
// code that walks it. `depth` is the Sequence's own level (1 for the outermost).
constexpr int kMaxSequenceDepth = 16;
inline void check_sequence_depth(const Field& f, int depth) {
  if (depth > kMaxSequenceDepth)
    f.fail("Sequence nested more than " + std::to_string(kMaxSequenceDepth) + " levels deep");
}

}  // namespace lmscope::tok
