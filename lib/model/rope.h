// RoPE, the tables: rope.cos / rope.sin [B,T,hd] at each row's position ids, built on the host
// (small) from the angles of kernels/rope.cuh, where the rotation itself is written once for
// the CPU and CUDA backends (Backend::rope applies it).
#pragma once
#include "tensor/tensor.h"

namespace lmscope {

// cos/sin [B,T,hd] for position_ids [B,T] (int32): row entries j and j + hd/2 share one angle.
void rope_tables(Tensor& cos, Tensor& sin, const Tensor& position_ids, int hd, float theta);

}  // namespace lmscope
