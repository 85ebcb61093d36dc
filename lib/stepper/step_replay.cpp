#include "stepper/step_replay.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "model/trace_config.h"
#include "tokenizer/encode_trace.h"
#include "tokenizer/ids_text.h"

namespace lmscope {

ModelConfig trace_model_config(const TraceReader& tr) {
  if (!tr.has_root_attr("config_json"))
    throw std::runtime_error("'" + tr.path() + "' has no config_json attribute (the model's numbers)");
  return parse_trace_model_config(tr.root_attr_string("config_json"), "'" + tr.path() + "' config_json");
}

SamplingConfig trace_sampling(const TraceReader& tr) {
  SamplingConfig c;
  if (tr.n_steps() == 0) return c;
  const auto j = nlohmann::json::parse(tr.step_group_attrs_json(0, "sample"), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return c;
  // The file's numbers are only shown, but each must fit its field: a value outside [lo, hi]
  // (HF's traces record an unset seed as -1) keeps the default.
  auto num = [&](const char* key, double fallback, double lo, double hi) {
    const double v = j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
    return v >= lo && v <= hi ? v : fallback;
  };
  constexpr double kFloatMax = 3.4e38;
  c.do_sample = num("do_sample", 0, 0, 1) != 0;
  c.temperature = float(num("temperature", c.temperature, 0, kFloatMax));
  c.top_k = int(num("top_k", c.top_k, 0, 2147483647.0));
  c.top_p = float(num("top_p", c.top_p, 0, 1));
  c.min_p = float(num("min_p", c.min_p, 0, 1));
  c.repetition_penalty = float(num("repetition_penalty", c.repetition_penalty, 0, kFloatMax));
  c.seed = uint64_t(num("seed", 0, 0, 18446744073709549568.0));   // the largest double below 2^64
  return c;
}

namespace {

std::vector<std::vector<int32_t>> trace_prompts(const TraceReader& tr) {
  std::vector<std::vector<int32_t>> prompts;
  if (!tr.has_root_attr("prompts")) return prompts;
  const auto j = nlohmann::json::parse(tr.root_attr_string("prompts"), nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) throw std::runtime_error("'" + tr.path() + "': the prompts attribute is not a JSON list of id lists");
  for (const auto& row : j) {
    std::vector<int32_t> ids;
    if (row.is_array())
      for (const auto& id : row)
        if (id.is_number_integer()) ids.push_back(id.get<int32_t>());
    prompts.push_back(std::move(ids));
  }
  return prompts;
}

}  // namespace

int trace_rows(const TraceReader& tr) {
  const size_t n = trace_prompts(tr).size();
  if (n > 0) return int(n);
  return tr.n_steps() > 0 && tr.has_hook(0, "tokens.input_ids") ? int(tr.read(0, "tokens.input_ids").shape[0]) : 1;
}

std::vector<std::string> trace_intro_pages(const TraceReader& tr, const std::function<std::string(int32_t)>& token_text) {
  std::vector<std::string> pages;
  const auto prompts = trace_prompts(tr);
  for (size_t b = 0; b < prompts.size(); ++b) {
    EncodeTrace et;
    if (read_tokenizer_trace(tr, int(b), et))
      pages.push_back(render_merges_page(et, token_text));
    else
      pages.push_back("ids " + join_ids(prompts[b]) + " (the trace has no /tokenizer/row_" + std::to_string(b) +
                      " group: no merges to show)\n");
  }
  return pages;
}

void replay_trace(const TraceReader& tr, Stepper& stepper) {
  for (int s = 0; s < tr.n_steps(); ++s) {
    std::map<std::string, HookData> hooks;
    for (const std::string& h : tr.hooks(s)) {
      // The pages draw neither the cache (kv.*) nor the lens: not read.
      if (h.compare(0, 3, "kv.") == 0 || h.compare(0, 5, "lens.") == 0) continue;
      hooks[h] = tr.read(s, h);
    }
    stepper.replay_step(tr.step_info(s), std::move(hooks));
  }
  stepper.finish();
}

}  // namespace lmscope
