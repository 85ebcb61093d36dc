// The schemes lmscope-quant runs, by name: a weight scheme, an activation scheme, or both.
#pragma once
#include <string>
#include <vector>

#include "quant/quant_backend.h"
#include "quant/weight_quant.h"

namespace lmscope::quant {

struct SchemeSpec {
  std::string name;
  WeightScheme weights = WeightScheme::Float;
  ActScheme acts = ActScheme::Float;
  bool stored_blocks = false;   // gguf-blocks: the GGUF's own blocks, the identity check
};

// "w8-channel", "w8-tensor", "w8-std", "w4-group", "a8-token", "a8-static", "w8a8"
// (= w8-channel + a8-token), "gguf-blocks". Throws std::runtime_error
// "--scheme: unknown scheme 'x' (known: ...)".
SchemeSpec parse_scheme(const std::string& name);
const std::vector<std::string>& scheme_names();

}  // namespace lmscope::quant
