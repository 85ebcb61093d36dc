#include "python/src/python_hooks.h"

#include <pybind11/numpy.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace lmscope::py {

namespace pyb = pybind11;

PythonHooks::PythonHooks(std::vector<PythonHook> hooks, std::unique_ptr<Interventions> specs)
    : hooks_(std::move(hooks)), specs_(std::move(specs)) {}

PythonHooks::~PythonHooks() {
  // The functions are Python objects: drop them holding the GIL, wherever this is destroyed.
  pyb::gil_scoped_acquire gil;
  hooks_.clear();
}

bool PythonHooks::edits(Hook h, int layer) const {
  if (specs_ && specs_->edits(h, layer)) return true;
  for (const PythonHook& p : hooks_)
    if (p.hook == h && p.layer == layer) return true;
  return false;
}

void PythonHooks::begin_run(const std::vector<int64_t>& prompt_lengths, int max_new_tokens) {
  if (specs_) specs_->begin_run(prompt_lengths, max_new_tokens);
}

namespace {

pyb::array_t<int32_t> int_array(const Tensor& t) {
  pyb::array_t<int32_t> a(t.shape());
  std::memcpy(a.mutable_data(), t.i32(), t.nbytes());
  return a;
}

}  // namespace

void PythonHooks::apply(Backend& be, Hook h, int layer, Tensor& t, const EditContext& ctx) {
  if (specs_ && specs_->edits(h, layer)) specs_->apply(be, h, layer, t, ctx);
  bool any = false;
  for (const PythonHook& p : hooks_) any = any || (p.hook == h && p.layer == layer);
  if (!any) return;

  Tensor host = be.to_host(t);   // the CPU backend: t itself
  pyb::gil_scoped_acquire gil;
  pyb::dict info;
  info["hook"] = hook_name(h, layer);
  info["layer"] = layer;
  info["step"] = ctx.step;
  info["positions"] = int_array(*ctx.position_ids);
  info["attention_mask"] = int_array(*ctx.attention_mask);
  for (const PythonHook& p : hooks_) {
    if (p.hook != h || p.layer != layer) continue;
    using Array = pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>;
    Array a(host.shape());
    std::memcpy(a.mutable_data(), host.f32(), host.nbytes());
    pyb::object r = p.fn(a, info);   // a Python exception propagates as error_already_set
    Array out = r.is_none() ? a : Array::ensure(r);
    if (!out) throw pyb::type_error("hook on '" + p.label + "' returned " + std::string(pyb::str(pyb::type::of(r))) +
                                    ", not an array or None");
    const Shape returned(out.shape(), out.shape() + out.ndim());
    if (returned != host.shape())
      throw pyb::value_error("hook on '" + p.label + "' returned shape " + shape_str(returned) + ", the tensor is " +
                             shape_str(host.shape()));
    std::memcpy(host.f32(), out.data(), host.nbytes());
  }
  t = be.upload(host);
}

std::string PythonHooks::record_json() const {
  nlohmann::ordered_json out = specs_ ? specs_->record() : nlohmann::ordered_json::array();
  for (const PythonHook& p : hooks_) {
    nlohmann::ordered_json j;
    j["spec"] = p.label + "=python";
    j["site"] = hook_name(p.hook, p.layer);
    j["op"] = "python";
    out.push_back(j);
  }
  return out.dump();
}

}  // namespace lmscope::py
