// Attention masks, built on the host from a step's attention mask (small: [B,T,S]).
#pragma once
#include "tensor/tensor.h"

namespace lmscope {

// mask.causal [T,S] int32: 1 where query t (absolute column past + t) may see key column s.
Tensor causal_mask(int64_t T, int64_t S);
// mask.combined [B,T,S] float32: 0 where causal and the key is real, else kMaskedScore.
Tensor combined_mask(const Tensor& attention_mask /*[B,S]*/, int64_t T);
// The same for a sliding-window layer (Gemma 3's local layers): a query at column q sees key
// column s only when also s > q - window, i.e. itself and the window - 1 columns before it.
// Columns, not positions: pads inside the window take their share of it, as in HF's
// sliding_window_overlay (transformers' masking_utils), which compares cache indices.
Tensor sliding_combined_mask(const Tensor& attention_mask /*[B,S]*/, int64_t T, int64_t window);

}  // namespace lmscope
