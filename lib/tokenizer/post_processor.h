// tokenizer.json "post_processor": what encode(add_special=true) adds around the ids.
// ByteLevel adds nothing (it only adjusts offsets); TemplateProcessing's "single" template
// adds its special tokens (BOS/EOS) around the sequence "A"; Sequence runs them in order.
// Anything else (BertProcessing, RobertaProcessing) is refused by name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/json_field.h"

namespace lmscope::tok {

class PostProcessor {
 public:
  // One element of the single-sequence template: the sequence itself, or special ids.
  struct Item {
    bool is_sequence = false;
    std::string name;               // the special token's name in the template
    std::vector<int32_t> ids;       // its ids
  };

  static PostProcessor from_json(const Field& f);   // f may be null

  // The special ids added before and after a single sequence (empty for ByteLevel/null).
  const std::vector<Item>& before() const { return before_; }
  const std::vector<Item>& after() const { return after_; }
  std::string describe() const { return describe_; }

 private:
  void collect(const Field& f, int depth = 0);
  std::vector<Item> before_, after_;
  std::string describe_ = "none";
  bool has_template_ = false;
};

}  // namespace lmscope::tok
