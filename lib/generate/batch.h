// Batching prompts of different lengths the way HF tokenizers + generate do.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace lmscope {

// Rows one forward pass takes. Memory grows with rows x positions^2 (attention scores) and
// every row runs in one batch, so many prompts go to several runs instead: 10,000 short
// prompts would need gigabytes even on the tiny test model.
constexpr size_t kMaxBatchRows = 256;

enum class PaddingSide { Left, Right };
PaddingSide parse_padding_side(const std::string& s);   // "left" / "right"
const char* padding_side_name(PaddingSide s);

// A growing batch: ids and attention mask [B, S], one column appended per generated token.
struct Batch {
  std::vector<std::vector<int32_t>> ids;    // [B][S] with pads
  std::vector<std::vector<int32_t>> mask;   // [B][S] 1 real / 0 pad
  std::vector<std::vector<int32_t>> pos;    // [B][S] RoPE position of each column

  // Throws one line for no prompt, an empty prompt or more than kMaxBatchRows prompts.
  static Batch from_prompts(const std::vector<std::vector<int32_t>>& prompts, PaddingSide side,
                            int32_t pad_id);
  int64_t rows() const { return int64_t(ids.size()); }
  int64_t cols() const { return ids.empty() ? 0 : int64_t(ids[0].size()); }
  // New tokens, mask 1, at `positions` (empty: the row's last column position + 1, as HF
  // generate does).
  void append(const std::vector<int32_t>& column, const std::vector<int32_t>& positions = {});

  // [B, cols()] tensors of the columns [from, cols())
  Tensor ids_tensor(int64_t from = 0) const;
  Tensor mask_tensor() const;
  // Columns [from, end) of pos. The prompt's positions are HF generate's
  // cumsum(mask) - 1 with 0 at pads (transformers 5.x; 4.x put 1 there); each new column
  // continues from the last one. With right padding the first new token therefore sits at
  // the position after the last PAD's (0) + 1, i.e. it ignores how many tokens are real.
  Tensor position_ids(int64_t from = 0) const;
};

}  // namespace lmscope
