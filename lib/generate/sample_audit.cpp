#include "generate/sample_audit.h"

namespace lmscope {

void offer_sample_audit(Trace& trace, const std::vector<SampleAudit>& audits, const std::vector<char>& finished,
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
    w->set_step_group_attr("sample", "min_p", double(cfg.min_p));
    w->set_step_group_attr("sample", "repetition_penalty", double(cfg.repetition_penalty));
    w->set_step_group_attr("sample", "seed", int64_t(cfg.seed));
  }
}

}  // namespace lmscope
