#include "trace/trace.h"

#include <stdexcept>

#include "trace/kv_rows.h"

namespace lmscope {

Trace::Trace(HookSet hooks, TraceWriter* writer) : hooks_(std::move(hooks)), writer_(writer) {
  fired_.resize(int(Hook::Count));
  not_in_model_.assign(int(Hook::Count), 0);
}

void Trace::set_not_in_model(const std::vector<Hook>& hooks) {
  for (Hook h : hooks) not_in_model_[int(h)] = 1;
}

void Trace::begin_step(const StepInfo& info) {
  step_ = info.step;
  step_T_ = info.T;
  if (writer_) writer_->begin_step(info);
  if (sink_) sink_->begin_step(info);
}

void Trace::offer(Hook h, int layer, const Tensor& t) {
  if (!wants(h, layer)) return;
  if (t.device() != Device::Host) throw std::logic_error("Trace::offer: tensor is not on the host");
  auto& row = fired_[int(h)];
  if (int(row.size()) <= layer + 1) row.resize(layer + 2, 0);
  row[layer + 1] = 1;
  ++written_;
  if (sink_) sink_->offer(h, layer, t);
  if (!writer_) return;
  const std::string name = hook_name(h, layer);
  const char* axes = hook_info(h).axes;
  if (t.dtype() == DType::I32) {
    writer_->write(name, axes, t.shape(), t.i32());
    return;
  }
  // bf16/f16 compute: stored as float32 (docs/trace-format.md)
  const Tensor f = t.dtype() == DType::F32 ? t : t.to_f32();
  if (is_kv_hook(h)) {
    // The sink saw the whole cache; the file gets the rows this step appended, so a trace
    // grows linearly with the tokens generated (trace/kv_rows.h).
    Tensor rows = appended_kv_rows(f, step_T_);
    writer_->write_kv_rows(name, rows.shape(), rows.f32(), f.dim(2) - step_T_);
  } else {
    writer_->write(name, axes, f.shape(), f.f32());
  }
}

// Which requested hooks count as missing when they never fired. Not those the model does not
// compute (set_not_in_model), nor two families of quant.*:
//  * quant.*.scale / .saturated are lmscope-quant's QuantBackend's, offered for each of a
//    layer's seven linears whenever its scheme quantizes, whatever the weight: none of them can
//    be missing under a scheme, and without one none is computed;
//  * quant.*.q8 / .q8_scale only where the backend quantizes activations (--cpu-activations
//    q8). There a requested one that never fired is reported: its matmul multiplied float32
//    activations (a weight held as float32 or bf16, a block type the q8 path does not hold).
bool Trace::counts_if_never_fired(Hook h) const {
  if (not_in_model_[int(h)]) return false;
  if (int(h) < int(Hook::QuantQProjScale)) return true;
  if (int(h) < int(Hook::QuantAttnNormQ8)) return false;   // the scale family
  return quantizing_backend_;
}

std::vector<std::string> Trace::never_fired() const {
  std::vector<std::string> out;
  for (const HookInfo& info : all_hooks()) {
    const auto& row = fired_[int(info.id)];
    if (info.per_layer || !counts_if_never_fired(info.id)) continue;
    const bool fired = row.size() > 0 && row[0];   // a global hook's slot: layer -1
    if (hooks_.enabled(info.id, -1) && !fired) out.push_back(info.pattern);
  }
  for (const std::string& name : hooks_.enabled_names()) {
    auto p = parse_hook_name(name);
    if (!p || p->layer < 0 || !counts_if_never_fired(p->id)) continue;
    const auto& row = fired_[int(p->id)];
    if (!(int(row.size()) > p->layer + 1 && row[p->layer + 1])) out.push_back(name);
  }
  return out;
}

}  // namespace lmscope
