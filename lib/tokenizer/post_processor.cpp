#include "tokenizer/post_processor.h"

namespace lmscope::tok {

PostProcessor PostProcessor::from_json(const Field& f) {
  PostProcessor p;
  if (f.is_null()) return p;
  p.describe_.clear();
  p.collect(f);
  return p;
}

void PostProcessor::collect(const Field& f, int depth) {
  f.expect_object();
  Field type_f = f.at("type");
  std::string type = type_f.str();
  auto note = [&](const std::string& s) { describe_ += (describe_.empty() ? "" : ", ") + s; };
  if (type == "Sequence") {
    check_sequence_depth(f, depth + 1);
    Field list = f.at("processors");
    list.expect_array();
    for (size_t i = 0; i < list.size(); ++i) collect(list.at(i), depth + 1);
    return;
  }
  if (type == "ByteLevel") {
    note("ByteLevel");
    return;
  }
  if (type != "TemplateProcessing")
    type_f.fail("unsupported post-processor '" + type + "' (supported: ByteLevel, TemplateProcessing, Sequence)");
  if (has_template_) f.fail("more than one TemplateProcessing is not supported");
  has_template_ = true;

  // "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}
  Field specials = f.at("special_tokens");
  specials.expect_object();
  Field single = f.at("single");
  single.expect_array();
  bool seen_sequence = false;
  std::string shape;
  for (size_t i = 0; i < single.size(); ++i) {
    Field piece = single.at(i);
    piece.expect_object();
    if (auto seq = piece.get("Sequence")) {
      if (seen_sequence) seq->fail("the single template names the sequence twice");
      seen_sequence = true;
      shape += std::string(shape.empty() ? "" : " ") + "$A";
      continue;
    }
    auto sp = piece.get("SpecialToken");
    if (!sp) piece.fail("expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    Item item;
    item.name = sp->at("id").str();
    Field def = specials.at(item.name);
    Field ids = def.at("ids");
    ids.expect_array();
    for (size_t k = 0; k < ids.size(); ++k) {
      int64_t id = ids.at(k).integer();
      if (id < 0 || id > INT32_MAX) ids.at(k).fail("token id out of range");
      item.ids.push_back(int32_t(id));
    }
    shape += std::string(shape.empty() ? "" : " ") + item.name;
    (seen_sequence ? after_ : before_).push_back(std::move(item));
  }
  if (!seen_sequence) single.fail("the single template has no {\"Sequence\": {\"id\": \"A\"}}");
  note("TemplateProcessing(" + shape + ")");
}

}  // namespace lmscope::tok
