#include "generate/generator.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace lmscope {

namespace {

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// The sampling audit of one step, [B,N] tensors offered as sample.* hooks.
void offer_audit(Trace& trace, const std::vector<SampleAudit>& audits, const std::vector<char>& finished,
                 const SamplingConfig& cfg) {
  if (!trace.wants(Hook::SampleChosen) && !trace.wants(Hook::SampleCandidates) && !trace.wants(Hook::SampleRaw) &&
      !trace.wants(Hook::SamplePenalized) && !trace.wants(Hook::SampleScaled) && !trace.wants(Hook::SampleProbs) &&
      !trace.wants(Hook::SampleKept) && !trace.wants(Hook::SampleSurvivors) && !trace.wants(Hook::SampleU) &&
      !trace.wants(Hook::SampleFinished))
    return;
  const int64_t B = int64_t(audits.size()), N = int64_t(audits[0].candidates.size());
  Tensor cand = Tensor::zeros({B, N}, DType::I32), kept = Tensor::zeros({B, N}, DType::I32);
  Tensor raw = Tensor::zeros({B, N}), pen = Tensor::zeros({B, N}), scaled = Tensor::zeros({B, N}),
         probs = Tensor::zeros({B, N});
  Tensor surv = Tensor::zeros({B}, DType::I32), chosen = Tensor::zeros({B}, DType::I32),
         fin = Tensor::zeros({B}, DType::I32), u = Tensor::zeros({B});
  for (int64_t b = 0; b < B; ++b) {
    const SampleAudit& a = audits[b];
    for (int64_t n = 0; n < N; ++n) {
      cand.i32()[b * N + n] = a.candidates[n];
      kept.i32()[b * N + n] = a.kept[n];
      raw.f32()[b * N + n] = a.raw[n];
      pen.f32()[b * N + n] = a.penalized[n];
      scaled.f32()[b * N + n] = a.scaled[n];
      probs.f32()[b * N + n] = a.probs[n];
    }
    surv.i32()[b] = a.survivors;
    chosen.i32()[b] = a.chosen;
    fin.i32()[b] = finished[b];
    u.f32()[b] = a.u;
  }
  trace.offer(Hook::SampleCandidates, cand);
  trace.offer(Hook::SampleRaw, raw);
  trace.offer(Hook::SamplePenalized, pen);
  trace.offer(Hook::SampleScaled, scaled);
  trace.offer(Hook::SampleProbs, probs);
  trace.offer(Hook::SampleKept, kept);
  trace.offer(Hook::SampleSurvivors, surv);
  trace.offer(Hook::SampleU, u);
  trace.offer(Hook::SampleChosen, chosen);
  trace.offer(Hook::SampleFinished, fin);
  if (TraceWriter* w = trace.writer()) {
    w->set_step_group_attr("sample", "do_sample", int64_t(cfg.do_sample));
    w->set_step_group_attr("sample", "temperature", double(cfg.temperature));
    w->set_step_group_attr("sample", "top_k", int64_t(cfg.top_k));
    w->set_step_group_attr("sample", "top_p", double(cfg.top_p));
    w->set_step_group_attr("sample", "repetition_penalty", double(cfg.repetition_penalty));
    w->set_step_group_attr("sample", "seed", int64_t(cfg.seed));
  }
}

// The planted cache bugs (GenerationFaults) applied to a cached decode step's inputs.
// prompt_cols: the columns of the prefill, which is all the cache keeps under cache_not_appended.
void apply_faults(const GenerationFaults& f, int64_t prompt_cols, StepInput& in) {
  const int64_t B = in.input_ids.dim(0), T = in.input_ids.dim(1);
  if (f.no_position_offset)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t) in.position_ids.i32()[b * T + t] = int32_t(t);
  if (f.cache_not_appended) {   // keys: the prefill's columns, then this step's own
    const Tensor& full = in.attention_mask;
    const int64_t S = full.dim(1), S2 = prompt_cols + T;
    Tensor m = Tensor::zeros({B, S2}, DType::I32);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t s = 0; s < prompt_cols; ++s) m.i32()[b * S2 + s] = full.i32()[b * S + s];
      for (int64_t t = 0; t < T; ++t) m.i32()[b * S2 + prompt_cols + t] = full.i32()[b * S + S - T + t];
    }
    in.attention_mask = m;
  }
  if (f.mask_not_extended) {
    const int64_t S = in.attention_mask.dim(1);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S - T; ++s) in.attention_mask.i32()[b * S + s] = 0;
  }
}

}  // namespace

GenerateResult generate(Decoder& decoder, const GenerateOptions& opt, Trace* trace) {
  const ModelConfig& cfg = decoder.config();
  Batch batch = Batch::from_prompts(opt.prompts, opt.padding_side, opt.pad_id);
  if (opt.batching.column_positions)
    for (auto& row : batch.pos)
      for (size_t s = 0; s < row.size(); ++s) row[s] = int32_t(s);
  const int64_t B = batch.rows(), P = batch.cols();
  if (P > cfg.max_position_embeddings)
    throw std::runtime_error("prompt of " + std::to_string(P) + " tokens is longer than max_position_embeddings " +
                             std::to_string(cfg.max_position_embeddings) + " (config.json)");
  if (P + opt.max_new_tokens > cfg.max_position_embeddings)
    throw std::runtime_error("prompt (" + std::to_string(P) + " tokens) + --max-new-tokens " +
                             std::to_string(opt.max_new_tokens) + " exceeds max_position_embeddings " +
                             std::to_string(cfg.max_position_embeddings) + " (config.json)");
  if (opt.max_new_tokens < 1) throw std::runtime_error("--max-new-tokens must be at least 1");

  std::unique_ptr<KVCache> cache;
  if (opt.use_cache) cache = std::make_unique<KVCache>(decoder.backend(), cfg, B, P + opt.max_new_tokens);

  Sampler sampler(opt.sampling);
  GenerateResult res;
  res.new_tokens.assign(B, {});
  std::vector<char> finished(B, 0);
  // read_last_real needs the logits of every column (a row's last real token may sit left of pads).
  const bool want_all_logits = (trace && trace->wants(Hook::Logits)) || opt.batching.read_last_real;

  for (int step = 0; step < opt.max_new_tokens; ++step) {
    // With a cache, the prefill feeds every column and each decode step only the newest;
    // without one, every step feeds the whole sequence again (HF use_cache=False).
    const bool cached_decode = cache && step > 0;
    const int64_t from = cached_decode ? batch.cols() - 1 : 0;
    StepInput in{batch.ids_tensor(from), batch.position_ids(from), batch.mask_tensor()};
    if (cached_decode && opt.faults.any()) apply_faults(opt.faults, P, in);
    const int64_t T = in.input_ids.dim(1);
    if (trace)
      trace->begin_step(StepInfo{step, step == 0 ? "prefill" : "decode", opt.use_cache,
                                 cache ? cache->length : 0, T, in.attention_mask.dim(1)});

    const double t0 = now_seconds();
    Tensor logits = decoder.forward(in, cache.get(), trace,
                                    want_all_logits ? LogitsFor::AllPositions : LogitsFor::LastPosition);
    const double dt = now_seconds() - t0;
    (step == 0 ? res.prefill_seconds : res.decode_seconds) += dt;
    (step == 0 ? res.prefill_tokens : res.decode_tokens) += B * T;
    if (cached_decode && opt.faults.cache_not_appended) cache->length = P;   // the bug: K/V not kept

    // HF: next_token_logits = logits[:, -1, :]  (the last COLUMN, whatever the padding)
    const int64_t Tl = logits.dim(1), V = logits.dim(2);
    std::vector<int32_t> next(B), last_real_pos(B);
    std::vector<SampleAudit> audits(B);
    for (int64_t b = 0; b < B; ++b) {
      const auto& ids = batch.ids[b];
      const auto& mask = batch.mask[b];
      int64_t col = Tl - 1;   // HF: the last column
      std::vector<int32_t> context;
      if (opt.batching.read_last_real) {   // the row's last real column, and only real ids
        int64_t s = batch.cols() - 1;
        while (s > 0 && mask[s] == 0) --s;
        col = s - (batch.cols() - Tl);
        last_real_pos[b] = batch.pos[b][s];
        for (size_t i = 0; i < ids.size(); ++i)
          if (mask[i]) context.push_back(ids[i]);
      } else {
        // HF's repetition penalty looks at the row's ids after its left padding
        // (generate passes the leading pad count as prompt_ignore_length).
        size_t lead = 0;
        while (lead < mask.size() && mask[lead] == 0) ++lead;
        context.assign(ids.begin() + lead, ids.end());
      }
      const float* row = logits.f32() + (b * Tl + col) * V;
      int32_t tok = sampler.sample(row, int(V), context, &audits[b]);
      if (finished[b]) tok = opt.pad_id;   // next * unfinished + pad * (1 - unfinished)
      if (!opt.forced_tokens.empty()) tok = opt.forced_tokens.at(b).at(step);
      audits[b].chosen = tok;
      next[b] = tok;
      if (std::find(opt.eos_ids.begin(), opt.eos_ids.end(), tok) != opt.eos_ids.end()) finished[b] = 1;
    }
    if (trace) offer_audit(*trace, audits, finished, opt.sampling);
    batch.append(next);
    if (opt.batching.read_last_real)   // the new token continues from the row's own last token
      for (int64_t b = 0; b < B; ++b) batch.pos[b].back() = last_real_pos[b] + 1;
    for (int64_t b = 0; b < B; ++b) res.new_tokens[b].push_back(next[b]);
    res.steps = step + 1;
    if (opt.on_step) opt.on_step(step, next);
    if (std::all_of(finished.begin(), finished.end(), [](char f) { return f != 0; })) break;
  }
  if (cache) res.kv_bytes = cache->bytes();
  return res;
}

}  // namespace lmscope
