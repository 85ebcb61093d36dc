#include "quant/quant_run.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "compare/distribution.h"
#include "compare/metrics.h"
#include "runs/run.h"
#include "generate/score.h"
#include "model/decoder.h"
#include "quant/quant_backend.h"

namespace lmscope::quant {

const std::vector<std::string>& compared_layer_hooks() {
  static const std::vector<std::string> k = {"attn_norm", "attn_out", "resid_mid", "ffn_norm", "ffn_out", "resid_post"};
  return k;
}

namespace {

// Keeps every offered tensor, by hook name.
class Capture final : public TraceSink {
 public:
  std::map<std::string, HookData> hooks;
  void offer(Hook h, int layer, const Tensor& t) override { hooks[hook_name(h, layer)] = to_hook_data(h, layer, t); }
};

struct Run {
  std::map<std::string, HookData> hooks;
  Tensor logits;   // [1,T,V]
};

StepInput single_row(const std::vector<int32_t>& ids) {
  const int64_t T = int64_t(ids.size());
  StepInput in;
  in.input_ids = Tensor::zeros({1, T}, DType::I32);
  in.position_ids = Tensor::zeros({1, T}, DType::I32);
  in.attention_mask = Tensor::zeros({1, T}, DType::I32);
  for (int64_t t = 0; t < T; ++t) {
    in.input_ids.i32()[t] = ids[size_t(t)];
    in.position_ids.i32()[t] = int32_t(t);
    in.attention_mask.i32()[t] = 1;
  }
  return in;
}

std::string hook_globs() {
  std::string g = "final_norm,logits,quant.*";
  for (const std::string& h : compared_layer_hooks()) g += ",layers.*." + h;
  return g;
}

Run traced_forward(Decoder& d, QuantBackend& qb, const std::vector<int32_t>& ids, int num_layers) {
  Capture cap;
  Trace trace(HookSet(hook_globs(), "", num_layers), nullptr);
  trace.set_sink(&cap);
  qb.set_trace(&trace);
  trace.begin_step(StepInfo{});
  Run r;
  r.logits = d.forward(single_row(ids), nullptr, &trace, LogitsFor::AllPositions);
  qb.set_trace(nullptr);
  r.hooks = std::move(cap.hooks);
  return r;
}

double rel_error(const Run& a, const Run& ref, const std::string& hook) {
  return compute_metrics(a.hooks.at(hook).values, ref.hooks.at(hook).values).rel;
}

void compare_runs(const Run& a, const Run& ref, const std::vector<int32_t>& ids, int num_layers, SchemeResult& s) {
  for (int l = 0; l < num_layers; ++l) {
    std::vector<double> row;
    for (const std::string& h : compared_layer_hooks()) row.push_back(rel_error(a, ref, "layers." + std::to_string(l) + "." + h));
    s.layer_errors.push_back(row);
  }
  s.final_norm_error = rel_error(a, ref, "final_norm");
  s.logits_error = rel_error(a, ref, "logits");
  const int64_t T = ref.logits.dim(1), V = ref.logits.dim(2);
  int64_t agree = 0;
  for (int64_t t = 0; t < T; ++t) {
    const auto lp = log_softmax_at(ref.logits.f32() + t * V, V), lq = log_softmax_at(a.logits.f32() + t * V, V);
    PositionResult p;
    p.t = t;
    p.kl = kl_divergence(lp, lq);
    p.ref_top1 = top_k(lp, 1)[0].first;
    p.top1 = top_k(lq, 1)[0].first;
    agree += p.ref_top1 == p.top1;
    s.mean_kl += p.kl / double(T);
    s.max_kl = std::max(s.max_kl, p.kl);
    s.positions.push_back(p);
  }
  s.top1_agreement = double(agree) / double(T);
  s.perplexity = score_logits(a.logits, {ids}).perplexity;
}

}  // namespace

QuantReport run_quant(const ModelConfig& cfg, const Weights& loaded, Backend& backend, const std::vector<int32_t>& ids,
                      const std::vector<SchemeSpec>& schemes, const QuantOptions& opt) {
  if (ids.size() < 2) throw std::runtime_error("the text has " + std::to_string(ids.size()) + " token(s); at least 2 are needed");
  const auto too_long = [&](size_t n) { return cfg.max_position_embeddings > 0 && int64_t(n) > cfg.max_position_embeddings; };
  const std::string limit = " tokens, more than max_position_embeddings " + std::to_string(cfg.max_position_embeddings) +
                            " (config.json)";
  if (too_long(ids.size())) throw std::runtime_error("the text has " + std::to_string(ids.size()) + limit);
  for (const std::vector<int32_t>& c : opt.calibration)
    if (too_long(c.size())) throw std::runtime_error("a --calibrate prompt has " + std::to_string(c.size()) + limit);
  for (const SchemeSpec& s : schemes)
    if (s.acts == ActScheme::Static && opt.calibration.empty())
      throw std::runtime_error("--scheme " + s.name + " needs calibration prompts: give --calibrate F");
  QuantBackend qb(backend);
  QuantReport rep;
  rep.ids = ids;
  rep.num_layers = cfg.num_layers;
  rep.keep_norms_float = opt.keep_norms_float;
  const Weights ref_w = float_reference(loaded);
  rep.float_bytes = float_bytes(ref_w);

  Run ref;
  {
    qb.name_linears(ref_w);
    Decoder d(cfg, ref_w, qb);
    ref = traced_forward(d, qb, ids, cfg.num_layers);
    if (opt.also) opt.also("float32", d);
  }
  rep.perplexity = score_logits(ref.logits, {ids}).perplexity;

  for (const SchemeSpec& spec : schemes) {
    SchemeResult s;
    s.name = spec.name;
    SchemeWeights sw = spec.stored_blocks ? stored_blocks_weights(loaded)
                                          : quantize_weights(ref_w, spec.weights, opt.keep_norms_float);
    s.bytes = sw.bytes;
    s.saturated_weights = sw.saturated;
    s.matrices = std::move(sw.matrices);
    qb.name_linears(sw.weights);
    Decoder d(cfg, sw.weights, qb);
    if (spec.acts == ActScheme::Static) {   // min/max of every linear's input over the prompts
      qb.clear_calibration();
      qb.set_calibrating(true);
      for (const auto& p : opt.calibration) d.forward(single_row(p), nullptr, nullptr, LogitsFor::LastPosition);
      qb.set_calibrating(false);
      s.calibration_prompts = int(opt.calibration.size());
    }
    qb.set_activation(spec.acts);
    qb.reset_saturated();
    Run a = traced_forward(d, qb, ids, cfg.num_layers);
    s.saturated_activations = qb.saturated();
    if (opt.also) opt.also(spec.name, d);
    qb.set_activation(ActScheme::Float);
    compare_runs(a, ref, ids, cfg.num_layers, s);
    rep.schemes.push_back(std::move(s));
  }
  return rep;
}

namespace {
std::string pct(double f) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100.0 * f);
  return b;
}
std::string mib(int64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", double(bytes) / 1048576.0);
  return b;
}
}  // namespace

std::string quant_report_text(const QuantReport& r, const PieceFn& piece) {
  std::ostringstream o;
  o << "text: " << r.ids.size() << " tokens; reference float32: " << mib(r.float_bytes) << ", perplexity "
    << fmt_num(r.perplexity, 4) << (r.keep_norms_float ? "" : "; norm weights quantized too") << "\n";
  o << "relative error = max|scheme - float32| / max|float32| over a hook's tensor\n\n";
  const int L = r.num_layers;
  o << "scheme        weights     perplexity  mean KL   max KL    top-1   resid_post err: layer 0 / " << L / 2 << " / "
    << L - 1 << "   logits err\n";
  for (const SchemeResult& s : r.schemes) {
    char line[512];
    const auto err = [&](int l) { return fmt_num(s.layer_errors[size_t(l)].back()); };
    std::snprintf(line, sizeof line, "%-13s %-11s %-11s %-9s %-9s %-7s %s / %s / %s   %s\n", s.name.c_str(), mib(s.bytes).c_str(),
                  fmt_num(s.perplexity, 4).c_str(), fmt_num(s.mean_kl).c_str(), fmt_num(s.max_kl).c_str(),
                  pct(s.top1_agreement).c_str(), err(0).c_str(), err(L / 2).c_str(), err(L - 1).c_str(),
                  fmt_num(s.logits_error).c_str());
    o << line;
    if (s.saturated_weights) o << "              " << s.saturated_weights << " weights saturated\n";
    if (s.calibration_prompts)
      o << "              calibrated on " << s.calibration_prompts << " prompt(s); " << s.saturated_activations
        << " activation values saturated\n";
  }
  for (const SchemeResult& s : r.schemes) {
    o << "\n" << s.name << ": per position (next token: float32 top-1 vs scheme top-1, KL)\n";
    for (const PositionResult& p : s.positions)
      o << "  t=" << p.t << "  " << piece(p.ref_top1) << (p.ref_top1 == p.top1 ? " = " : " != ") << piece(p.top1)
        << "  KL " << fmt_num(p.kl) << "\n";
  }
  return o.str();
}

std::string quant_report_json(const QuantReport& r, const PieceFn& piece) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["ids"] = r.ids;
  j["keep_norms_float"] = r.keep_norms_float;
  j["error_measure"] = "max|scheme - float32| / max|float32| over the hook's tensor";
  j["reference"] = {{"bytes", r.float_bytes}, {"perplexity", json_num(r.perplexity)}};
  j["layer_hooks"] = compared_layer_hooks();
  j["schemes"] = ordered_json::array();
  for (const SchemeResult& s : r.schemes) {
    ordered_json js;
    js["name"] = s.name;
    js["bytes"] = s.bytes;
    js["perplexity"] = json_num(s.perplexity);
    js["mean_kl"] = json_num(s.mean_kl);
    js["max_kl"] = json_num(s.max_kl);
    js["top1_agreement"] = s.top1_agreement;
    js["saturated_weights"] = s.saturated_weights;
    js["saturated_activations"] = s.saturated_activations;
    js["calibration_prompts"] = s.calibration_prompts;
    js["layers"] = ordered_json::array();
    for (size_t l = 0; l < s.layer_errors.size(); ++l) {
      ordered_json jl = {{"layer", l}};
      for (size_t h = 0; h < compared_layer_hooks().size(); ++h) jl[compared_layer_hooks()[h]] = json_num(s.layer_errors[l][h]);
      js["layers"].push_back(jl);
    }
    js["final_norm_error"] = json_num(s.final_norm_error);
    js["logits_error"] = json_num(s.logits_error);
    js["positions"] = ordered_json::array();
    for (const PositionResult& p : s.positions)
      js["positions"].push_back({{"t", p.t}, {"kl", json_num(p.kl)}, {"ref_top1", p.ref_top1}, {"top1", p.top1},
                                 {"ref_top1_piece", piece(p.ref_top1)}, {"top1_piece", piece(p.top1)}});
    js["matrices"] = ordered_json::array();
    for (const MatrixStats& m : s.matrices)
      js["matrices"].push_back({{"layer", m.layer}, {"name", m.name}, {"rows", m.rows}, {"cols", m.cols},
                                {"saturated", m.saturated}, {"scale_min", m.scale_min}, {"scale_max", m.scale_max}});
    j["schemes"].push_back(js);
  }
  return j.dump(1);
}

}  // namespace lmscope::quant
