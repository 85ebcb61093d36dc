#include "generate/policies.h"

#include <stdexcept>
#include <string>

namespace lmscope {

NextTokenSite hf_next_token_site(const Batch& batch, int64_t row, int64_t logits_cols) {
  const auto& ids = batch.ids[size_t(row)];
  const auto& mask = batch.mask[size_t(row)];
  size_t lead = 0;
  while (lead < mask.size() && mask[lead] == 0) ++lead;
  return NextTokenSite{logits_cols - 1, batch.pos[size_t(row)].back(), {ids.begin() + int64_t(lead), ids.end()}};
}

std::function<int32_t(int64_t, int, int32_t)> force_tokens(std::vector<std::vector<int32_t>> tokens) {
  return [tokens = std::move(tokens)](int64_t row, int step, int32_t) {
    if (size_t(row) >= tokens.size() || size_t(step) >= tokens[size_t(row)].size())
      throw std::logic_error("force_tokens: no token for row " + std::to_string(row) + " at step " +
                             std::to_string(step));
    return tokens[size_t(row)][size_t(step)];
  };
}

}  // namespace lmscope
