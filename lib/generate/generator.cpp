#include "generate/generator.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "generate/sample_audit.h"

namespace lmscope {

namespace {

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

void check_lengths(const ModelConfig& cfg, int64_t prompt_cols, int max_new_tokens) {
  const std::string limit = " max_position_embeddings " + std::to_string(cfg.max_position_embeddings) + " (config.json)";
  if (prompt_cols > cfg.max_position_embeddings)
    throw std::runtime_error("prompt of " + std::to_string(prompt_cols) + " tokens is longer than" + limit);
  if (prompt_cols + max_new_tokens > cfg.max_position_embeddings)
    throw std::runtime_error("prompt (" + std::to_string(prompt_cols) + " tokens) + --max-new-tokens " +
                             std::to_string(max_new_tokens) + " exceeds" + limit);
  if (max_new_tokens < 1) throw std::runtime_error("--max-new-tokens must be at least 1");
}

// HF: with a cache the prefill feeds every column and each decode step only the newest; without
// one every step feeds the whole sequence again (use_cache=False). The mask always covers all.
StepInput hf_step_input(const Batch& batch, const StepContext& ctx) {
  const int64_t from = ctx.cached_decode() ? batch.cols() - 1 : 0;
  return StepInput{batch.ids_tensor(from), batch.position_ids(from), batch.mask_tensor()};
}

bool is_eos(const std::vector<int32_t>& eos_ids, int32_t tok) {
  return std::find(eos_ids.begin(), eos_ids.end(), tok) != eos_ids.end();
}

}  // namespace

GenerateResult generate(Decoder& decoder, const GenerateOptions& opt, Trace* trace) {
  const GenerationPolicies& policy = opt.policies;
  Batch batch = Batch::from_prompts(opt.prompts, opt.padding_side, opt.pad_id);   // [B, P]
  if (policy.place_prompt) policy.place_prompt(batch);
  const int64_t B = batch.rows(), P = batch.cols();
  check_lengths(decoder.config(), P, opt.max_new_tokens);
  Trace untraced(HookSet(), nullptr);   // carries an editor when the caller traces nothing
  if (opt.editor) {
    if (!trace) trace = &untraced;
    trace->set_editor(opt.editor);
    std::vector<int64_t> prompt_lengths;
    for (const auto& p : opt.prompts) prompt_lengths.push_back(int64_t(p.size()));
    opt.editor->begin_run(prompt_lengths, opt.max_new_tokens);
  }

  std::unique_ptr<KVCache> cache;
  if (opt.use_cache) cache = std::make_unique<KVCache>(decoder.backend(), decoder.config(), B, P + opt.max_new_tokens);
  Sampler sampler(opt.sampling);
  const auto read_next = policy.read_next ? policy.read_next : hf_next_token_site;
  const LogitsFor logits_for = (trace && trace->wants(Hook::Logits)) || policy.read_next ? LogitsFor::AllPositions
                                                                                          : LogitsFor::LastPosition;
  GenerateResult res;
  res.new_tokens.assign(B, {});
  res.stop_reasons.assign(size_t(B), StopReason::None);
  std::vector<char> finished(B, 0);
  std::unique_ptr<StopStringMatcher> stops;
  if (!opt.stop_strings.empty()) stops = std::make_unique<StopStringMatcher>(opt.stop_strings, opt.token_bytes, batch.ids);

  for (int step = 0; step < opt.max_new_tokens; ++step) {
    const StepContext ctx{step, P, cache.get()};
    StepInput in = hf_step_input(batch, ctx);                // ids, positions [B,T]; mask [B,S]
    if (policy.adjust_input) policy.adjust_input(in, ctx);
    const int64_t T = in.input_ids.dim(1);
    if (trace)
      trace->begin_step(StepInfo{step, step == 0 ? "prefill" : "decode", opt.use_cache, cache ? cache->length : 0, T,
                                 in.attention_mask.dim(1)});

    const double t0 = now_seconds();
    Tensor logits = decoder.forward(in, cache.get(), trace, logits_for);   // [B,T,V] or [B,1,V]
    (step == 0 ? res.prefill_seconds : res.decode_seconds) += now_seconds() - t0;
    (step == 0 ? res.prefill_tokens : res.decode_tokens) += B * T;

    const int64_t Tl = logits.dim(1), V = logits.dim(2);
    std::vector<int32_t> next(B), next_pos(B);
    std::vector<SampleAudit> audits(B);
    for (int64_t b = 0; b < B; ++b) {
      const NextTokenSite site = read_next(batch, b, Tl);
      int32_t tok = sampler.sample(logits.f32() + (b * Tl + site.column) * V, int(V), site.context, &audits[b]);
      if (finished[b]) tok = opt.pad_id;   // HF: next * unfinished + pad * (1 - unfinished)
      if (policy.accept_token) tok = policy.accept_token(b, step, tok);
      audits[b].chosen = next[b] = tok;
      next_pos[b] = site.position + 1;
      const bool stop_string = stops && stops->push(size_t(b), tok);   // HF checks every row, finished or not
      if (!finished[b] && (is_eos(opt.eos_ids, tok) || stop_string)) {
        finished[b] = 1;
        res.stop_reasons[size_t(b)] = is_eos(opt.eos_ids, tok) ? StopReason::Eos : StopReason::StopString;
      }
    }
    if (trace) offer_sample_audit(*trace, audits, finished, opt.sampling);
    batch.append(next, next_pos);
    for (int64_t b = 0; b < B; ++b) res.new_tokens[b].push_back(next[b]);
    res.steps = step + 1;
    if (opt.on_step) opt.on_step(step, next);
    if (std::all_of(finished.begin(), finished.end(), [](char f) { return f != 0; })) break;
  }
  for (StopReason& r : res.stop_reasons)
    if (r == StopReason::None) r = StopReason::MaxNewTokens;
  if (cache) res.kv_bytes = cache->bytes();
  return res;
}

}  // namespace lmscope
