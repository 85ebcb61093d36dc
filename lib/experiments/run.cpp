#include "experiments/run.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "trace/trace_writer.h"

namespace lmscope {

std::string ModelContext::text(const std::vector<int32_t>& ids) const {
  if (detokenize) return detokenize(ids);
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  return s;
}

GenerateResult run_traced(const ModelContext& m, const GenerateOptions& opt, const HookSet& hooks,
                          const std::string& out, TraceSink* sink) {
  const ModelConfig& cfg = m.cfg();
  TraceWriter writer(out);
  Trace trace(hooks, &writer);
  trace.set_sink(sink);
  GenerateResult res = generate(*m.decoder, opt, &trace);

  std::vector<int32_t> gqa(size_t(cfg.num_heads));
  for (int h = 0; h < cfg.num_heads; ++h) gqa[size_t(h)] = h / cfg.kv_group();
  writer.set_root_attr("format", std::string("lmscope-trace"));
  writer.set_root_attr("format_version", int64_t(1));
  writer.set_root_attr("producer", m.producer);
  writer.set_root_attr("model_path", m.model_path);
  writer.set_root_attr("config_json", cfg.json_text);
  writer.set_root_attr("backend", m.decoder->backend().name());
  writer.set_root_attr("compute_dtype", m.decoder->backend().compute_dtype());
  writer.set_root_attr("command_line", m.command_line);
  writer.set_root_attr("prompts", nlohmann::json(opt.prompts).dump());
  writer.set_root_attr("padding_side", std::string(padding_side_name(opt.padding_side)));
  writer.set_root_attr("use_cache", int64_t(opt.use_cache));
  writer.set_root_attr("max_new_tokens", int64_t(opt.max_new_tokens));
  writer.set_root_attr("pad_token_id", int64_t(opt.pad_id));
  writer.set_root_attr("gqa_map", gqa);
  writer.set_root_attr("n_steps", int64_t(res.steps));
  writer.set_root_attr("missing_hooks", nlohmann::json(trace.never_fired()).dump());
  const int64_t B = int64_t(res.new_tokens.size()), N = res.steps;
  std::vector<int32_t> gen;
  for (const auto& row : res.new_tokens) gen.insert(gen.end(), row.begin(), row.end());
  writer.write_root_dataset("generated_ids", {B, N}, gen.data());
  writer.commit();
  return res;
}

HookData to_hook_data(Hook h, int layer, const Tensor& t, int64_t last_t) {
  HookData d;
  d.hook = hook_name(h, layer);
  std::string axes = hook_info(h).axes;
  for (size_t a = 0, b; a <= axes.size(); a = b + 1) {
    b = axes.find(',', a);
    if (b == std::string::npos) b = axes.size();
    d.axes.push_back(axes.substr(a, b - a));
  }
  d.shape = t.shape();
  // Elements kept: every one, or the last last_t of axis T ([outer, T, inner] blocks).
  const int ti = d.axis("T");
  int64_t outer = 1, inner = 1, T = 1, from = 0;
  if (last_t > 0 && ti >= 0 && ti < t.ndim() && t.dim(ti) > last_t) {
    for (int i = 0; i < ti; ++i) outer *= t.dim(i);
    for (int i = ti + 1; i < t.ndim(); ++i) inner *= t.dim(i);
    T = t.dim(ti);
    from = T - last_t;
    d.shape[size_t(ti)] = last_t;
  } else {
    inner = t.numel();
  }
  d.values.resize(size_t(shape_numel(d.shape)));
  Tensor f;
  if (t.dtype() == DType::I32) d.is_int = true;
  else f = t.dtype() == DType::F32 ? t : t.to_f32();
  size_t o = 0;
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t r = from; r < T; ++r) {
      const int64_t base = (a * T + r) * inner;
      if (d.is_int)
        for (int64_t i = 0; i < inner; ++i) d.values[o++] = t.i32()[base + i];
      else
        for (int64_t i = 0; i < inner; ++i) d.values[o++] = f.f32()[base + i];
    }
  return d;
}

std::string fmt_num(double v, int digits) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  if (v == 0) return "0";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

nlohmann::ordered_json json_num(double v) {
  if (std::isinf(v)) return "inf";
  if (std::isnan(v)) return nullptr;
  return v;
}

}  // namespace lmscope
