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

}  // namespace

GenerateResult generate(Decoder& decoder, const GenerateOptions& opt, Trace* trace) {
  const ModelConfig& cfg = decoder.config();
  Batch batch = Batch::from_prompts(opt.prompts, opt.padding_side, opt.pad_id);
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
  const bool want_all_logits = trace && trace->wants(Hook::Logits);

  for (int step = 0; step < opt.max_new_tokens; ++step) {
    // With a cache, the prefill feeds every column and each decode step only the newest;
    // without one, every step feeds the whole sequence again (HF use_cache=False).
    const int64_t from = (cache && step > 0) ? batch.cols() - 1 : 0;
    StepInput in{batch.ids_tensor(from), batch.position_ids(from), batch.mask_tensor()};
    const int64_t T = in.input_ids.dim(1);
    if (trace)
      trace->begin_step(StepInfo{step, step == 0 ? "prefill" : "decode", opt.use_cache,
                                 cache ? cache->length : 0, T, batch.cols()});

    const double t0 = now_seconds();
    Tensor logits = decoder.forward(in, cache.get(), trace,
                                    want_all_logits ? LogitsFor::AllPositions : LogitsFor::LastPosition);
    const double dt = now_seconds() - t0;
    (step == 0 ? res.prefill_seconds : res.decode_seconds) += dt;
    (step == 0 ? res.prefill_tokens : res.decode_tokens) += B * T;

    // HF: next_token_logits = logits[:, -1, :]  (the last COLUMN, whatever the padding)
    const int64_t Tl = logits.dim(1), V = logits.dim(2);
    std::vector<int32_t> next(B);
    std::vector<SampleAudit> audits(B);
    for (int64_t b = 0; b < B; ++b) {
      const float* row = logits.f32() + (b * Tl + Tl - 1) * V;
      // HF's repetition penalty looks at the row's ids after its left padding
      // (generate passes the leading pad count as prompt_ignore_length).
      const auto& ids = batch.ids[b];
      const auto& mask = batch.mask[b];
      size_t lead = 0;
      while (lead < mask.size() && mask[lead] == 0) ++lead;
      const std::vector<int32_t> context(ids.begin() + lead, ids.end());
      int32_t tok = sampler.sample(row, int(V), context, &audits[b]);
      if (finished[b]) tok = opt.pad_id;   // next * unfinished + pad * (1 - unfinished)
      audits[b].chosen = tok;
      next[b] = tok;
      if (std::find(opt.eos_ids.begin(), opt.eos_ids.end(), tok) != opt.eos_ids.end()) finished[b] = 1;
    }
    if (trace) offer_audit(*trace, audits, finished, opt.sampling);
    batch.append(next);
    for (int64_t b = 0; b < B; ++b) res.new_tokens[b].push_back(next[b]);
    res.steps = step + 1;
    if (opt.on_step) opt.on_step(step, next);
    if (std::all_of(finished.begin(), finished.end(), [](char f) { return f != 0; })) break;
  }
  if (cache) res.kv_bytes = cache->bytes();
  return res;
}

}  // namespace lmscope
