#include "python/src/array_sink.h"

#include <cstring>

namespace lmscope::py {

void ArraySink::offer(Hook h, int layer, const Tensor& t) {
  if (step_ >= keep_steps_) return;
  HeldTensor& held = steps_[step_][hook_name(h, layer)];
  held.shape = t.shape();
  // Offered tensors are host float32 or int32 (trace/trace.h); valid only during this call.
  held.ids = t.dtype() == DType::I32;
  if (held.ids) {
    held.i32.assign(t.i32(), t.i32() + t.numel());
  } else {
    held.f32.assign(t.f32(), t.f32() + t.numel());
  }
}

}  // namespace lmscope::py
