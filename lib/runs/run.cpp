#include "runs/run.h"

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tokenizer/ids_text.h"
#include "trace/run_record.h"
#include "trace/trace_writer.h"

namespace lmscope {

std::string ModelContext::text(const std::vector<int32_t>& ids) const {
  if (tokenizer) try {
      return tokenizer->decode(ids);
    } catch (const std::exception&) {   // an id outside the vocabulary: show the ids
    }
  return join_ids(ids);
}

const EncodeTrace* ModelContext::encoding_of(const std::vector<int32_t>& ids) const {
  for (const EncodeTrace& e : encodings)
    if (e.ids == ids) return &e;
  return nullptr;
}

TracedRun run_traced(const ModelContext& m, const GenerateOptions& opt, const HookSet& hooks, const std::string& out,
                     TraceSink* sink, int compress, const std::function<void(TraceWriter&)>& more) {
  std::unique_ptr<TraceWriter> writer;
  if (!out.empty()) {
    writer = std::make_unique<TraceWriter>(out);
    writer->set_compression(compress);
  }
  Trace trace(hooks, writer.get());
  trace.set_sink(sink);
  TracedRun run;
  static_cast<GenerateResult&>(run) = generate(*m.decoder, opt, &trace);
  run.missing_hooks = trace.never_fired();
  run.tensors_traced = trace.tensors_written();
  if (!writer) return run;

  const ModelConfig& cfg = m.cfg();
  RunRecord r;
  r.producer = m.producer;
  r.model_path = m.model_path;
  r.config_json = cfg.json_text;
  r.backend = m.decoder->backend().name();
  r.compute_dtype = m.decoder->backend().compute_dtype();
  r.activations = m.decoder->backend().activations();
  r.command_line = m.command_line;
  r.prompts = opt.prompts;
  r.padding_side = padding_side_name(opt.padding_side);
  r.use_cache = opt.use_cache;
  r.max_new_tokens = opt.max_new_tokens;
  r.pad_token_id = opt.pad_id;
  for (int h = 0; h < cfg.num_heads; ++h) r.gqa_map.push_back(h / cfg.kv_group());
  r.generated_ids = run.new_tokens;
  r.eos_token_ids = opt.eos_ids;
  r.stop_strings = opt.stop_strings;
  for (StopReason s : run.stop_reasons) r.stop_reasons.push_back(stop_reason_name(s));
  r.missing_hooks = run.missing_hooks;
  if (opt.editor) r.interventions_json = opt.editor->record_json();
  if (m.tokenizer)
    r.write_tokenizer_row = [&](TraceWriter& w, int row) {
      if (const EncodeTrace* e = m.encoding_of(opt.prompts[size_t(row)])) write_tokenizer_trace(w, row, *e, *m.tokenizer);
    };
  if (more) more(*writer);
  write_run_record(*writer, r);
  writer->commit();
  return run;
}

HookData to_hook_data(Hook h, int layer, const Tensor& t, int64_t last_t) {
  HookData d;
  d.hook = hook_name(h, layer);
  d.axes = hook_axes(h);
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

nlohmann::ordered_json json_num(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return nullptr;
  return v;
}

}  // namespace lmscope
