// Attention masks and RoPE tables, built on the host from a step's attention mask and
// position ids (small: [B,T,S] and [B,T,hd]).
#pragma once
#include "tensor/tensor.h"

namespace lmscope {

// mask.causal [T,S] int32: 1 where query t (absolute column past + t) may see key column s.
Tensor causal_mask(int64_t T, int64_t S);
// mask.combined [B,T,S] float32: 0 where causal and the key is real, else kMaskedScore.
Tensor combined_mask(const Tensor& attention_mask /*[B,S]*/, int64_t T);
// rope.cos / rope.sin [B,T,hd] at each row's position ids [B,T].
void rope_tables(Tensor& cos, Tensor& sin, const Tensor& position_ids, int hd, float theta);

}  // namespace lmscope
