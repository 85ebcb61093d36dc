#include "tokenizer/json_field.h"

#include <stdexcept>

#include "io/json_error.h"

namespace lmscope::tok {

std::string Field::child_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

void Field::fail(const std::string& what) const {
  throw std::runtime_error(one_line(file_ + ": " + (path_.empty() ? "(top level)" : path_) + ": " + what));
}

void Field::expect_object() const {
  if (!v_->is_object()) fail("expected an object, got " + json_kind(*v_));
}
void Field::expect_array() const {
  if (!v_->is_array()) fail("expected an array, got " + json_kind(*v_));
}

bool Field::has(const std::string& key) const {
  if (!v_->is_object()) return false;
  auto it = v_->find(key);
  return it != v_->end() && !it->is_null();
}

Field Field::at(const std::string& key) const {
  expect_object();
  auto it = v_->find(key);
  if (it == v_->end()) Field(*v_, file_, child_path(key)).fail("missing");
  return Field(*it, file_, child_path(key));
}

Field Field::at_or_null(const std::string& key) const {
  static const nlohmann::json null_value;
  expect_object();
  auto it = v_->find(key);
  return Field(it == v_->end() ? null_value : *it, file_, child_path(key));
}

std::optional<Field> Field::get(const std::string& key) const {
  expect_object();
  auto it = v_->find(key);
  if (it == v_->end() || it->is_null()) return std::nullopt;
  return Field(*it, file_, child_path(key));
}

Field Field::at(size_t i) const {
  expect_array();
  if (i >= v_->size()) fail("index " + std::to_string(i) + " out of range");
  return Field((*v_)[i], file_, path_ + "[" + std::to_string(i) + "]");
}

size_t Field::size() const {
  if (!v_->is_array() && !v_->is_object()) fail("expected an array or object, got " + json_kind(*v_));
  return v_->size();
}

std::string Field::str() const {
  if (!v_->is_string()) fail("expected a string, got " + json_kind(*v_) + " " + json_short(*v_));
  return v_->get<std::string>();
}

int64_t Field::integer() const {
  if (v_->is_number_unsigned()) {
    uint64_t u = v_->get<uint64_t>();
    if (u > uint64_t(INT64_MAX)) fail("integer out of range");
    return int64_t(u);
  }
  if (!v_->is_number_integer()) fail("expected an integer, got " + json_kind(*v_) + " " + json_short(*v_));
  return v_->get<int64_t>();
}

bool Field::boolean() const {
  if (!v_->is_boolean()) fail("expected true or false, got " + json_kind(*v_) + " " + json_short(*v_));
  return v_->get<bool>();
}

double Field::number() const {
  if (!v_->is_number()) fail("expected a number, got " + json_kind(*v_) + " " + json_short(*v_));
  return v_->get<double>();
}

bool Field::bool_or(const std::string& key, bool def) const {
  auto f = get(key);
  return f ? f->boolean() : def;
}

std::string Field::str_or(const std::string& key, const std::string& def) const {
  auto f = get(key);
  return f ? f->str() : def;
}

}  // namespace lmscope::tok
