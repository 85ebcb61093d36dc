#include "trace/run_record.h"

#include <nlohmann/json.hpp>

namespace lmscope {

void write_run_record(TraceWriter& w, const RunRecord& r) {
  w.set_root_attr("format", std::string("lmscope-trace"));
  w.set_root_attr("format_version", kTraceFormatVersion);
  w.set_root_attr("producer", r.producer);
  w.set_root_attr("model_path", r.model_path);
  w.set_root_attr("config_json", r.config_json);
  w.set_root_attr("backend", r.backend);
  w.set_root_attr("compute_dtype", r.compute_dtype);
  w.set_root_attr("activations", r.activations.empty() ? std::string("f32") : r.activations);
  w.set_root_attr("command_line", r.command_line);
  w.set_root_attr("prompts", nlohmann::json(r.prompts).dump());
  w.set_root_attr("padding_side", r.padding_side);
  w.set_root_attr("use_cache", int64_t(r.use_cache));
  w.set_root_attr("max_new_tokens", int64_t(r.max_new_tokens));
  w.set_root_attr("pad_token_id", int64_t(r.pad_token_id));
  w.set_root_attr("gqa_map", r.gqa_map);
  const int64_t B = int64_t(r.generated_ids.size()), N = B ? int64_t(r.generated_ids[0].size()) : 0;
  w.set_root_attr("n_steps", N);
  w.set_root_attr("missing_hooks", nlohmann::json(r.missing_hooks).dump());
  w.set_root_attr("eos_token_ids", nlohmann::json(r.eos_token_ids).dump());
  w.set_root_attr("stop_strings", nlohmann::json(r.stop_strings).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  w.set_root_attr("stop_reasons", nlohmann::json(r.stop_reasons).dump());
  if (!r.interventions_json.empty()) w.set_root_attr("interventions", r.interventions_json);
  std::vector<int32_t> flat;                   // [B,N]
  for (const auto& row : r.generated_ids) flat.insert(flat.end(), row.begin(), row.end());
  w.write_root_dataset("generated_ids", {B, N}, flat.data());
  if (r.write_tokenizer_row)
    for (int64_t b = 0; b < int64_t(r.prompts.size()); ++b) r.write_tokenizer_row(w, int(b));
}

}  // namespace lmscope
