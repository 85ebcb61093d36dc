// Wanted hook tensors on their way from a backend to the trace. A backend whose host copies are
// asynchronous (CUDA: pinned buffers, queued on its stream) has them offered once the device
// has caught up: when the pending copies reach kFlushBytes and at flush() (the end of the
// forward), so an enabled hook never stalls the device mid-layer. A synchronous backend (CPU)
// offers each tensor at once.
#pragma once
#include <cstddef>
#include <vector>

#include "backend/backend.h"
#include "trace/trace.h"

namespace lmscope {

class HookQueue {
 public:
  HookQueue(Backend& be, Trace* trace) : be_(be), trace_(trace) {}
  // Offers `t` (on the backend's device or the host) as hook h of `layer`, now or at flush().
  void push(Hook h, int layer, const Tensor& t);
  void flush();

 private:
  static constexpr size_t kFlushBytes = size_t(256) << 20;
  struct Pending {
    Hook h;
    int layer;
    Tensor t;
  };
  Backend& be_;
  Trace* trace_;
  std::vector<Pending> pending_;
  size_t bytes_ = 0;
};

}  // namespace lmscope
