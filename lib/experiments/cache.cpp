#include "experiments/cache.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>

#include "compare/compare_step.h"
#include "tokenizer/ids_text.h"
#include "trace/hooks.h"

namespace lmscope {

CacheTolerance cache_tolerance(const std::string& dtype) {
  CacheTolerance t;
  t.dtype = dtype;
  t.table = ToleranceTable::defaults();
  if (dtype == "f32" || dtype.empty()) {
    t.dtype = "f32";
    t.why =
        "float32: the cached and uncached paths compute the same sums, only with different matmul shapes (one "
        "row against the whole sequence), so they differ by summation order alone: a few float32 ulps (eps "
        "1.2e-7), orders of magnitude below the default table's 1e-4 of each tensor's scale "
        "(docs/tolerances.md). Anything beyond it, or any argmax flip, is a bug.";
    return t;
  }
  // Reduced precision: rules checked before the defaults, most specific first.
  const std::vector<std::pair<std::string, Tolerance>> rules = {
      {"logits", {1e-2, 3e-2}},   {"sample.probs", {2e-3, 2e-2}}, {"sample.*", {1e-2, 3e-2}},
      {"layers.*.attn.probs", {2e-3, 2e-2}}, {"layers.*", {1e-3, 2e-2}}, {"kv.*", {1e-3, 2e-2}},
      {"final_norm", {1e-3, 2e-2}}};
  for (auto it = rules.rbegin(); it != rules.rend(); ++it)
    t.table.add_override(it->first, it->second, dtype + ": 8-bit mantissa operands");
  t.why = dtype +
          ": matmul operands keep 8 bits of mantissa (eps 7.8e-3). The two paths run different matmul shapes, so "
          "different kernels and accumulation orders; a last-bit difference that flips one operand's rounding "
          "moves it by ~4e-3 of its value, and the logits drift by ~1e-2 of their scale. That is expected (users "
          "report it as a bug: transformers#25420, #36536); an argmax flip is expected drift only at a near-tie "
          "(top-2 margin within the logit tolerance). Beyond 2e-2 of the scale (3e-2 for logits), or a flip "
          "with a clear margin, is a bug.";
  return t;
}

std::vector<int32_t> synthetic_prompt(int n, int vocab, uint64_t seed) {
  if (n < 1) throw std::runtime_error("--prompt-len must be at least 1");
  if (vocab < 2) throw std::runtime_error("the vocabulary is too small for a synthetic prompt");
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> d(1, vocab - 1);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& id : ids) id = d(rng);
  return ids;
}

namespace {

// A cached run's hook tensor, kept as float32. The cache contents (kv.*: [B,Hkv,S,hd]) are kept
// as columns (position s: B*Hkv*hd floats) shared with the previous step where unchanged, so
// N steps of an append-only cache cost one copy of it, not N.
struct Stored {
  Hook id = Hook::Count;
  int layer = -1;
  Shape shape;
  bool is_int = false;
  std::vector<float> f;
  std::vector<int32_t> i;
  std::vector<std::shared_ptr<const std::vector<float>>> cols;   // kv.* only
};

bool is_kv(Hook h) { return h == Hook::KvK || h == Hook::KvV; }

HookData to_data(const Stored& s) {
  HookData d;
  d.hook = hook_name(s.id, s.layer);
  d.axes = hook_axes(s.id);
  d.shape = s.shape;
  d.is_int = s.is_int;
  if (is_kv(s.id)) {
    const int64_t B = s.shape[0], H = s.shape[1], S = s.shape[2], hd = s.shape[3];
    d.values.resize(size_t(B * H * S * hd));
    for (int64_t c = 0; c < S; ++c) {
      const std::vector<float>& col = *s.cols[size_t(c)];
      for (int64_t bh = 0; bh < B * H; ++bh)
        for (int64_t e = 0; e < hd; ++e) d.values[size_t((bh * S + c) * hd + e)] = col[size_t(bh * hd + e)];
    }
  } else if (s.is_int) {
    d.values.assign(s.i.begin(), s.i.end());
  } else {
    d.values.assign(s.f.begin(), s.f.end());
  }
  return d;
}

class CachedCapture : public TraceSink {
 public:
  void begin_step(const StepInfo& info) override {
    infos.push_back(info);
    steps.emplace_back();
  }
  void offer(Hook h, int layer, const Tensor& t) override {
    Stored s;
    s.id = h;
    s.layer = layer;
    s.shape = t.shape();
    const std::string name = hook_name(h, layer);
    if (t.dtype() == DType::I32) {
      s.is_int = true;
      s.i.assign(t.i32(), t.i32() + t.numel());
    } else if (is_kv(h) && t.ndim() == 4) {
      Tensor f = t.dtype() == DType::F32 ? t : t.to_f32();
      const int64_t B = s.shape[0], H = s.shape[1], S = s.shape[2], hd = s.shape[3];
      const Stored* prev = nullptr;
      if (steps.size() >= 2) {
        auto it = steps[steps.size() - 2].find(name);
        if (it != steps[steps.size() - 2].end() && it->second.shape[0] == B && it->second.shape[1] == H &&
            it->second.shape[3] == hd)
          prev = &it->second;
      }
      for (int64_t c = 0; c < S; ++c) {
        auto col = std::make_shared<std::vector<float>>(size_t(B * H * hd));
        for (int64_t bh = 0; bh < B * H; ++bh)
          std::copy_n(f.f32() + (bh * S + c) * hd, hd, col->data() + bh * hd);
        if (prev && c < int64_t(prev->cols.size()) && *prev->cols[size_t(c)] == *col) s.cols.push_back(prev->cols[size_t(c)]);
        else s.cols.push_back(std::move(col));
      }
    } else {
      Tensor f = t.dtype() == DType::F32 ? t : t.to_f32();
      s.f.assign(f.f32(), f.f32() + f.numel());
    }
    steps.back()[name] = std::move(s);
  }
  std::vector<StepInfo> infos;
  std::vector<std::map<std::string, Stored>> steps;
};

// The uncached run (the reference) against the stored cached run (A): a step's tensors are
// gathered as they arrive and compared when the step ends, through compare_step (the one
// comparison loop and its rule for what one side lacks, compare/compare_step.h), aligned as
// cached against uncached: the last position of each step, the cache kv.L.k / kv.L.v against
// the uncached k_rope / v of all positions.
class Comparer : public TraceSink {
 public:
  Comparer(const CachedCapture& c, const ToleranceTable& tol, std::vector<CacheStep>& out)
      : cached_(c), tol_(tol), out_(out) {}

  void begin_step(const StepInfo& info) override {
    end_step();
    open_step(info.step);
    cur_.T_uncached = info.T;
    cur_.S = info.S;
  }

  void offer(Hook h, int layer, const Tensor& t) override {
    // Only the rows the cached step has are compared: slice before widening to double (the
    // uncached step holds the whole sequence). k_rope / v are kept whole for the cache check.
    const std::string name = hook_name(h, layer);
    int64_t keep = -1;
    const Stored* c = cached(cur_.step, name);
    if (c && h != Hook::AttnKRope && h != Hook::AttnV) {
      const int ti = hook_axis(h, "T");
      if (ti >= 0 && size_t(ti) < c->shape.size()) keep = c->shape[size_t(ti)];
    }
    uncached_[name] = to_hook_data(h, layer, t, keep);
  }

  // Ends the last step; then the cached steps the uncached run never reached, which hold hooks
  // on one side only (reported as compare_step's rule says, not dropped).
  void finish() {
    end_step();
    for (size_t step = out_.size(); step < cached_.steps.size(); ++step) {
      open_step(int(step));
      end_step();
    }
  }

 private:
  void open_step(int step) {
    cur_ = CacheStep();
    cur_.step = step;
    if (size_t(step) < cached_.infos.size()) {
      cur_.T_cached = cached_.infos[size_t(step)].T;
      cur_.S = cached_.infos[size_t(step)].S;
    }
    uncached_.clear();
    open_ = true;
  }

  const Stored* cached(int step, const std::string& name) const {
    if (step < 0 || size_t(step) >= cached_.steps.size()) return nullptr;
    auto it = cached_.steps[size_t(step)].find(name);
    return it == cached_.steps[size_t(step)].end() ? nullptr : &it->second;
  }

  // Compares the step, then sums it up in cur_ and appends that to out_.
  void end_step() {
    if (!open_) return;
    open_ = false;
    StepHooks a, ref;
    a.source = "the cached run";
    if (size_t(cur_.step) < cached_.steps.size()) {
      const auto& stored = cached_.steps[size_t(cur_.step)];
      for (const auto& [name, s] : stored) a.names.push_back(name);
      a.read = [&stored](const std::string& name) { return to_data(stored.at(name)); };
    }
    ref.source = "the uncached run";
    for (const auto& [name, d] : uncached_) ref.names.push_back(name);
    ref.read = [this](const std::string& name) { return uncached_.at(name); };

    const size_t first = report_.results.size();
    compare_step(cur_.step, a, ref, HookFilter(), AlignOptions{-1, -1, /*last_position=*/true}, tol_, report_);
    if (a.has("logits") && ref.has("logits"))
      logit_stats(last_positions(a.read("logits"), 1), last_positions(ref.read("logits"), 1));
    for (size_t i = first; i < report_.results.size(); ++i) {
      const HookResult& r = report_.results[i];
      if (r.kind != HookResult::Kind::MissingInA) ++cur_.hooks_compared;
      if (r.hook.rfind("kv.", 0) == 0 && r.kind != HookResult::Kind::MissingInA) {
        cur_.kv_compared = true;
        cur_.kv_max_abs = std::max(cur_.kv_max_abs, r.m.max_abs);
      }
      if (r.pass || r.hook.rfind("sample.", 0) == 0) continue;   // sample.*: judged through the argmax
      cur_.pass = false;
      if (!cur_.first_failure) cur_.first_failure = r;
      auto p = parse_hook_name(r.hook);
      if (p && p->layer >= 0 && !cur_.first_layer_failure) cur_.first_layer_failure = r;
    }
    out_.push_back(cur_);
  }

  // Largest difference of the last position's logits, argmax of each side, the reference's margin.
  void logit_stats(const HookData& a, const HookData& r) {
    if (a.shape != r.shape || a.shape.size() != 3) return;
    const int64_t B = a.shape[0], T = a.shape[1], V = a.shape[2];
    double worst = 0, scale = 0, min_margin = INFINITY, flip_margin = INFINITY;
    bool agree = true;
    for (int64_t b = 0; b < B; ++b) {
      const double* x = a.values.data() + (b * T + T - 1) * V;
      const double* y = r.values.data() + (b * T + T - 1) * V;
      int64_t ax = 0, ay = 0;
      for (int64_t v = 0; v < V; ++v) {
        worst = std::max(worst, std::fabs(x[v] - y[v]));
        scale = std::max(scale, std::fabs(y[v]));
        if (x[v] > x[ax]) ax = v;
        if (y[v] > y[ay]) ay = v;
      }
      double second = -INFINITY;
      for (int64_t v = 0; v < V; ++v)
        if (v != ay) second = std::max(second, y[v]);
      const double margin = y[ay] - second;
      min_margin = std::min(min_margin, margin);
      if (ax != ay) {
        agree = false;
        flip_margin = std::min(flip_margin, margin);
      }
      if (b == 0) {
        cur_.argmax_cached = int32_t(ax);
        cur_.argmax_uncached = int32_t(ay);
      } else if (ax != ay) {
        cur_.argmax_cached = int32_t(ax);
        cur_.argmax_uncached = int32_t(ay);
      }
    }
    cur_.max_logit_diff = worst;
    cur_.logit_bound = tol_.lookup("logits").bound(scale);
    cur_.margin = agree ? min_margin : flip_margin;
  }

  const CachedCapture& cached_;
  const ToleranceTable& tol_;
  std::vector<CacheStep>& out_;
  bool open_ = false;
  CacheStep cur_;
  std::map<std::string, HookData> uncached_;   // the current step's tensors, as offered
  CompareReport report_;                       // every step's results
};

}  // namespace

void judge_cache(CacheReport& r) {
  r.max_logit_diff = 0;
  r.argmax_agree = 0;
  r.detected.reset();
  bool clear_flip = false, near_tie_flip = false;
  int flip_step = -1;
  for (const CacheStep& s : r.per_step) {
    r.max_logit_diff = std::max(r.max_logit_diff, s.max_logit_diff);
    const bool agree = s.argmax_cached == s.argmax_uncached;
    if (agree) ++r.argmax_agree;
    else {
      if (flip_step < 0) flip_step = s.step;
      (s.margin <= s.logit_bound ? near_tie_flip : clear_flip) = true;
    }
    if (!r.detected && s.first_failure) {
      CacheReport::Detection d;
      d.step = s.step;
      d.hook = s.first_failure->hook;
      d.reason = s.first_failure->reason();
      if (s.first_layer_failure) {
        d.layer_hook = s.first_layer_failure->hook;
        auto p = parse_hook_name(d.layer_hook);
        d.layer = p ? p->layer : -1;
        if (d.layer_hook != d.hook) d.reason += "; first layer hook: " + d.layer_hook + ": " + s.first_layer_failure->reason();
      }
      r.detected = d;
    }
  }
  if (r.detected) {
    r.verdict = "bug";
    r.verdict_why = "step " + std::to_string(r.detected->step) + ": " + r.detected->hook +
                    " is beyond the " + r.tol.dtype + " tolerance: not rounding, the cached path computes something else";
  } else if (clear_flip) {
    r.verdict = "bug";
    r.verdict_why = "the argmax flips at step " + std::to_string(flip_step) +
                    " with a margin larger than the logit tolerance: not a near-tie";
  } else if (near_tie_flip) {
    r.verdict = "drift";
    r.verdict_why = "every tensor is within the " + r.tol.dtype + " tolerance; the argmax flips only at near-ties "
                    "(top-2 margin within the logit tolerance): expected drift, not a bug";
  } else {
    r.verdict = "agree";
    r.verdict_why = "every tensor of every step is within the " + r.tol.dtype + " tolerance and the argmax agrees at " +
                    "every step";
  }
}

CacheReport run_cache_experiment(const ModelContext& m, const CacheOptions& opt) {
  if (opt.prompts.empty()) throw std::runtime_error("no prompt");
  const ModelConfig& cfg = m.cfg();
  // The pad rule (pad query rows and key columns are not compared) needs the attention mask.
  HookSet hooks((opt.hooks.empty() ? std::string("*") : opt.hooks) + ",tokens.attention_mask", opt.layers, cfg.num_layers);
  CacheReport rep;
  rep.fault = opt.fault;
  rep.timing_repeats = opt.timing ? std::max(1, opt.timing_repeats) : 0;
  rep.fault_site = fault_first_acts(opt.fault);
  rep.tol = cache_tolerance(m.decoder->backend().compute_dtype());
  rep.batch = int64_t(opt.prompts.size());
  for (const auto& p : opt.prompts) rep.prompt_len = std::max(rep.prompt_len, int64_t(p.size()));

  GenerateOptions cached;
  cached.prompts = opt.prompts;
  cached.max_new_tokens = opt.max_new_tokens;
  cached.sampling = opt.sampling;
  cached.pad_id = opt.pad_id;
  cached.eos_ids = opt.eos_ids;
  cached.use_cache = true;
  GenerateOptions uncached = cached;
  uncached.use_cache = false;
  cached.policies.adjust_input = cache_fault_policy(opt.fault);

  // Time: each path untraced, interleaved, the fastest of `timing_repeats` (the first run also
  // pays for thread pools and page faults).
  if (opt.timing) {
    rep.seconds_cached = rep.seconds_uncached = INFINITY;
    for (int i = 0; i < std::max(1, opt.timing_repeats); ++i) {
      GenerateResult tc = generate(*m.decoder, cached, nullptr);
      GenerateResult tu = generate(*m.decoder, uncached, nullptr);
      rep.seconds_cached = std::min(rep.seconds_cached, tc.prefill_seconds + tc.decode_seconds);
      rep.seconds_uncached = std::min(rep.seconds_uncached, tu.prefill_seconds + tu.decode_seconds);
      rep.tokens_uncached_free = tu.new_tokens;
    }
  }

  // The cached run, kept in memory; then the uncached run replaying its tokens, compared as it goes.
  auto out_path = [&](const char* name) { return (std::filesystem::path(opt.trace_dir) / name).string(); };
  if (!opt.trace_dir.empty()) std::filesystem::create_directories(opt.trace_dir);
  // One run, its hooks offered to `sink`, and written to trace_dir/<name> when there is one.
  auto run = [&](const GenerateOptions& o, TraceSink* sink, const char* name) {
    if (opt.trace_dir.empty()) {
      Trace trace(hooks, nullptr);
      trace.set_sink(sink);
      return generate(*m.decoder, o, &trace);
    }
    GenerateResult r = run_traced(m, o, hooks, out_path(name), sink);
    rep.trace_files.push_back(out_path(name));
    return r;
  };
  CachedCapture cap;
  const GenerateResult rc = run(cached, &cap, "cached.h5");
  rep.tokens_cached = rc.new_tokens;
  rep.steps = rc.steps;
  rep.tokens_cached_processed = rc.prefill_tokens + rc.decode_tokens;
  rep.kv_bytes = rc.kv_bytes;
  rep.kv_bytes_per_position =
      int64_t(2) * cfg.num_layers * rep.batch * cfg.num_kv_heads * cfg.head_dim * int64_t(sizeof(float));
  rep.kv_positions_filled = opt.fault == CacheFault::CacheNotAppended ? rep.prompt_len + (rc.steps > 1 ? 1 : 0)
                                                                       : rep.prompt_len + rc.steps - 1;

  uncached.policies.accept_token = force_tokens(rc.new_tokens);
  uncached.max_new_tokens = rc.steps;
  Comparer cmp(cap, rep.tol.table, rep.per_step);
  const GenerateResult ru = run(uncached, &cmp, "uncached.h5");
  cmp.finish();
  rep.tokens_uncached_processed = ru.prefill_tokens + ru.decode_tokens;
  const int64_t B = rep.batch, P = rep.prompt_len, N = rc.steps;
  rep.expected_cached = B * (P + N - 1);
  rep.expected_uncached = B * (N * P + N * (N - 1) / 2);
  judge_cache(rep);
  return rep;
}

std::string cache_report_json(const CacheReport& r, const ModelContext& m) {
  using J = nlohmann::ordered_json;
  J steps = J::array();
  for (const CacheStep& s : r.per_step) {
    J first = nullptr, first_layer = nullptr;
    if (s.first_failure) first = {{"hook", s.first_failure->hook}, {"reason", s.first_failure->reason()}};
    if (s.first_layer_failure) {
      auto p = parse_hook_name(s.first_layer_failure->hook);
      first_layer = {{"hook", s.first_layer_failure->hook}, {"layer", p ? p->layer : -1},
                     {"reason", s.first_layer_failure->reason()}};
    }
    steps.push_back({{"step", s.step},
                     {"T", {{"cached", s.T_cached}, {"uncached", s.T_uncached}}},
                     {"S", s.S},
                     {"max_logit_diff", json_num(s.max_logit_diff)},
                     {"logit_tolerance", s.logit_bound},
                     {"argmax", {{"cached", s.argmax_cached}, {"uncached", s.argmax_uncached}}},
                     {"argmax_agree", s.argmax_cached == s.argmax_uncached},
                     {"margin", json_num(s.margin)},
                     {"kv_max_abs", s.kv_compared ? json_num(s.kv_max_abs) : J(nullptr)},
                     {"pass", s.pass},
                     {"hooks_compared", s.hooks_compared},
                     {"first_failure", first},
                     {"first_layer_failure", first_layer}});
  }
  J detected = nullptr;
  if (r.detected)
    detected = {{"step", r.detected->step}, {"hook", r.detected->hook}, {"layer", r.detected->layer},
                {"layer_hook", r.detected->layer_hook}, {"reason", r.detected->reason},
                {"at_first_act", r.detected->step == r.fault_site.step && r.detected->layer == r.fault_site.layer}};
  J site = nullptr;
  if (r.fault != CacheFault::None) site = {{"step", r.fault_site.step}, {"layer", r.fault_site.layer}, {"what", r.fault_site.what}};
  J texts = J::array();
  for (const auto& t : r.tokens_cached) texts.push_back(m.text(t));
  J j = {{"steps", r.steps},
         {"max_logit_diff", json_num(r.max_logit_diff)},
         {"argmax_agree", r.argmax_agree},
         {"tokens_processed", {{"cached", r.tokens_cached_processed}, {"uncached", r.tokens_uncached_processed}}},
         {"tokens_processed_expected", {{"cached", r.expected_cached}, {"uncached", r.expected_uncached}}},
         {"kv_bytes", r.kv_bytes},
         {"kv_bytes_per_position", r.kv_bytes_per_position},
         {"kv_positions_filled", r.kv_positions_filled},
         {"seconds", {{"cached", r.seconds_cached}, {"uncached", r.seconds_uncached}}},
         {"timing_repeats", r.timing_repeats},
         {"batch", r.batch},
         {"prompt_tokens", r.prompt_len},
         {"compute_dtype", r.tol.dtype},
         {"tolerance", {{"logits", {{"atol", r.tol.table.lookup("logits").atol}, {"rtol", r.tol.table.lookup("logits").rtol}}},
                        {"activations", {{"atol", r.tol.table.lookup("layers.0.resid_post").atol},
                                         {"rtol", r.tol.table.lookup("layers.0.resid_post").rtol}}},
                        {"why", r.tol.why}}},
         {"verdict", r.verdict},
         {"verdict_why", r.verdict_why},
         {"fault", cache_fault_name(r.fault)},
         {"fault_first_acts", site},
         {"detected", detected},
         {"tokens", r.tokens_cached},
         {"text", texts},
         {"tokens_uncached_free_running", r.tokens_uncached_free},
         {"trace_files", r.trace_files},
         {"per_step", steps}};
  return j.dump(2);
}

std::string cache_report_text(const CacheReport& r, const ModelContext& m) {
  std::ostringstream o;
  char buf[400];
  o << "lmscope-cache: " << r.batch << " prompt" << (r.batch > 1 ? "s" : "") << " of " << r.prompt_len << " tokens, "
    << r.steps << " steps, with the KV cache vs without (the uncached run replays the cached run's tokens)\n";
  o << "fault: " << cache_fault_name(r.fault) << " (" << cache_fault_description(r.fault) << ")\n";
  const Tolerance lt = r.tol.table.lookup("logits");
  o << "compute dtype " << r.tol.dtype << ": logits within " << fmt_num(lt.atol) << " + " << fmt_num(lt.rtol)
    << " x scale. Why: " << r.tol.why << "\n\n";
  o << "step  T c/u      S  max|dlogit|  tol       argmax c/u      margin   kv max|d|  first hook beyond tolerance\n";
  for (const CacheStep& s : r.per_step) {
    std::string first = s.first_failure ? s.first_failure->hook : "-";
    if (s.first_layer_failure && s.first_layer_failure->hook != first) first += " (layer: " + s.first_layer_failure->hook + ")";
    std::snprintf(buf, sizeof buf, "%4d  %3lld/%-4lld %4lld  %-11s  %-8s  %6d/%-6d %s  %-7s  %-9s  %s\n", s.step,
                  (long long)s.T_cached, (long long)s.T_uncached, (long long)s.S, fmt_num(s.max_logit_diff).c_str(),
                  fmt_num(s.logit_bound).c_str(), s.argmax_cached, s.argmax_uncached,
                  s.argmax_cached == s.argmax_uncached ? "ok " : "FLIP", fmt_num(s.margin).c_str(),
                  s.kv_compared ? fmt_num(s.kv_max_abs).c_str() : "-", first.c_str());
    o << buf;
  }
  o << "\nargmax agreement " << r.argmax_agree << "/" << r.per_step.size() << ", largest logit difference "
    << fmt_num(r.max_logit_diff) << "\n";
  const int64_t P = r.prompt_len, N = r.steps;
  o << "work: cached " << r.tokens_cached_processed << " tokens (B(P + N - 1) = " << r.batch << "(" << P << " + " << N
    << " - 1) = " << r.expected_cached << "), uncached " << r.tokens_uncached_processed << " tokens (B(P + (P+1) + ... + (P+N-1)) = "
    << r.expected_uncached << "): " << fmt_num(double(r.tokens_uncached_processed) / double(std::max<int64_t>(1, r.tokens_cached_processed)))
    << "x\n";
  if (r.seconds_cached > 0 || r.seconds_uncached > 0)
    o << "time (untraced runs, fastest of " << r.timing_repeats << "): cached " << fmt_num(r.seconds_cached) << " s, uncached " << fmt_num(r.seconds_uncached)
      << " s\n";
  o << "KV cache: " << r.kv_bytes << " bytes allocated, " << r.kv_bytes_per_position
    << " bytes per position (2 x layers x B x KV heads x head dim x 4), " << r.kv_positions_filled << " positions filled\n";
  o << "tokens (cached run): ";
  for (size_t b = 0; b < r.tokens_cached.size(); ++b)
    o << (b ? " | " : "") << "'" << m.text(r.tokens_cached[b]) << "' [" << join_ids(r.tokens_cached[b]) << "]";
  o << "\n";
  if (r.fault != CacheFault::None) {
    o << "planted: first acts at step " << r.fault_site.step << ", layer " << r.fault_site.layer << " ("
      << r.fault_site.what << ")\n";
    if (r.detected) {
      const bool at = r.detected->step == r.fault_site.step && r.detected->layer == r.fault_site.layer;
      o << "detected: step " << r.detected->step << ", " << r.detected->hook;
      if (!r.detected->layer_hook.empty()) o << "; layer " << r.detected->layer << ", " << r.detected->layer_hook;
      o << (at ? "  (where it first acts)" : "  (NOT where it first acts)") << "\n  " << r.detected->reason << "\n";
    } else {
      o << "not detected in " << r.steps << " steps\n";
    }
  } else if (r.detected) {
    o << "first difference beyond tolerance: step " << r.detected->step << ", " << r.detected->hook << ": "
      << r.detected->reason << "\n";
  }
  o << "verdict: " << r.verdict << ": " << r.verdict_why << "\n";
  return o.str();
}

}  // namespace lmscope
