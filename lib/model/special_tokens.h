// EOS and PAD ids for generation, resolved the way HF generate does: generation_config.json
// first, then config.json; with no pad id, pad = the first eos id.
#pragma once
#include <string>
#include <vector>

#include "model/config.h"

namespace lmscope {

struct SpecialTokens {
  std::vector<int32_t> eos_ids;
  int32_t pad_id = 0;
};

SpecialTokens resolve_special_tokens(const ModelConfig& cfg, const std::string& model_dir);

}  // namespace lmscope
