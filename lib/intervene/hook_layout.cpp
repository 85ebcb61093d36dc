#include "intervene/hook_layout.h"

#include <stdexcept>

namespace lmscope {

HookLayout::HookLayout(Hook h, const Shape& shape) {
  const std::vector<std::string> axes = hook_axes(h);
  const int ti = hook_axis(h, "T");
  if (axes.size() != shape.size() || ti < 1 || axes[0] != "B")
    throw std::logic_error("HookLayout: " + std::string(hook_info(h).pattern) + " of shape " + shape_str(shape) +
                           " is not [B, ..., T, ...]");
  const int n = int(shape.size());
  std::vector<int64_t> stride(size_t(n), 1);
  for (int i = n - 2; i >= 0; --i) stride[size_t(i)] = stride[size_t(i) + 1] * shape[size_t(i) + 1];
  B = shape[0];
  T = shape[size_t(ti)];
  stride_b = stride[0];
  stride_t = stride[size_t(ti)];
  inner = shape.back();
  int hi = hook_axis(h, "H");
  if (hi < 0) hi = hook_axis(h, "Hkv");
  if (hi >= 0) heads = shape[size_t(hi)];
  // The remaining axes, in order: walk their multi-index.
  std::vector<int> rest;
  for (int i = 1; i < n; ++i)
    if (i != ti) rest.push_back(i);
  R = 1;
  for (int i : rest) R *= shape[size_t(i)];
  std::vector<int64_t> idx(rest.size(), 0);
  for (int64_t r = 0; r < R; ++r) {
    int64_t off = 0, head = 0;
    for (size_t k = 0; k < rest.size(); ++k) {
      off += idx[k] * stride[size_t(rest[k])];
      if (rest[k] == hi) head = idx[k];
    }
    rest_off.push_back(off);
    rest_head.push_back(head);
    rest_last.push_back(rest.empty() ? 0 : idx.back());
    for (int k = int(rest.size()) - 1; k >= 0; --k) {   // next multi-index
      if (++idx[size_t(k)] < shape[size_t(rest[size_t(k)])]) break;
      idx[size_t(k)] = 0;
    }
  }
}

HookLayout HookLayout::of_model(Hook h, const ModelConfig& cfg, int64_t B, int64_t T, int64_t S) {
  Shape shape;
  for (const std::string& a : hook_axes(h)) {
    if (a == "B") shape.push_back(B);
    else if (a == "T") shape.push_back(T);
    else if (a == "S") shape.push_back(S);
    else if (a == "D") shape.push_back(cfg.hidden_size);
    else if (a == "H") shape.push_back(cfg.num_heads);
    else if (a == "Hkv") shape.push_back(cfg.num_kv_heads);
    else if (a == "hd") shape.push_back(cfg.head_dim);
    else if (a == "F") shape.push_back(cfg.intermediate_size);
    else if (a == "V") shape.push_back(cfg.vocab_size);
    else throw std::logic_error("HookLayout::of_model: axis " + a);
  }
  return HookLayout(h, shape);
}

}  // namespace lmscope
