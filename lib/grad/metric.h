// Metrics: the scalar of a prefill's logits that a backward pass differentiates, and its
// gradient with respect to the logits (a small function each). docs/gradients.md.
//
//   logit_diff:pos=P:A,B    logits[P, A] - logits[P, B]
//   logprob:pos=P:A         log softmax(logits[P])[A]
//   prob:pos=P:A            softmax(logits[P])[A]
//   loss:FROM:TO            mean over t in [FROM, TO) of -log softmax(logits[t])[ids[t+1]]
//                           (teacher-forced; FROM empty: 0, TO empty: the prompt's length - 1)
//
// P counts a row's prompt tokens (padding skipped): 0 the first, -1 the last. A token A/B is an
// id (digits) or text that encodes to exactly one token: ` Paris` or `" Paris"` (quotes keep
// spaces and commas). A batch's metric is the sum of its rows' metrics, so that each row's
// gradients are that row's own.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace lmscope {

struct MetricSpec {
  enum class Kind { LogitDiff, LogProb, Prob, Loss };
  Kind kind = Kind::LogitDiff;
  int64_t pos = -1;                    // logit_diff, logprob, prob
  std::vector<std::string> tokens;     // logit_diff: 2, logprob and prob: 1 (as written, quotes removed)
  std::vector<int32_t> ids;            // the tokens resolved (resolve_metric_tokens)
  bool has_from = false, has_to = false;
  int64_t from = 0, to = 0;            // loss
  std::string text;                    // the spec as given
  std::string option = "--grad";       // how errors name it: --grad (lmscope-trace), --metric (lmscope-patch)
};

// Parses the spec; throws std::invalid_argument("--grad 'x': ...") in one line (`option`
// instead of --grad when given).
MetricSpec parse_metric(const std::string& spec, const std::string& option = "--grad");

// Fills spec.ids: digits are ids, anything else goes through `encode` and must give one id.
// Every id must be in [0, vocab). Throws std::invalid_argument naming the token.
using EncodeFn = std::function<std::vector<int32_t>(const std::string&)>;
void resolve_metric_tokens(MetricSpec& spec, int64_t vocab, const EncodeFn& encode);

// The metric and d metric / d logits for logits [B,T,V] (host float32) of prompts of
// `lengths[b]` real tokens each, left-padded (a row's tokens in the last lengths[b] columns)
// or right-padded (the first ones), with input ids [B,T]. A position outside a row's prompt
// or a non-finite metric: std::invalid_argument in one line.
struct MetricGrad {
  double value = 0;
  Tensor dlogits;   // [B,T,V], exactly 0 where the metric does not read
};
MetricGrad metric_and_grad(const MetricSpec& spec, const Tensor& logits, const Tensor& input_ids,
                           const std::vector<int64_t>& lengths, bool left_padded);

// The metric of one unpadded row: logits [T,V] of its T prompt tokens `ids` (host float32), no
// gradient. What a patching sweep reads from each patched row (experiments/patching.h). The same
// one-line errors as metric_and_grad.
double metric_value(const MetricSpec& spec, const float* logits, const int32_t* ids, int64_t T, int64_t V);

}  // namespace lmscope
