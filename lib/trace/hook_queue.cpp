#include "trace/hook_queue.h"

namespace lmscope {

void HookQueue::push(Hook h, int layer, const Tensor& t) {
  Tensor host = be_.to_host_async(t);
  if (!be_.host_copies_are_async() || t.device() == Device::Host) return trace_->offer(h, layer, host);
  pending_.push_back({h, layer, std::move(host)});
  bytes_ += pending_.back().t.nbytes();
  if (bytes_ >= kFlushBytes) flush();
}

void HookQueue::flush() {
  if (pending_.empty()) return;
  be_.synchronize();
  for (const Pending& p : pending_) trace_->offer(p.h, p.layer, p.t);
  pending_.clear();
  bytes_ = 0;
}

}  // namespace lmscope
