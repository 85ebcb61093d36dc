// Scoring text under the model (teacher forcing): ONE forward over the whole text, and at every
// position t >= 1 the probability the model gave token t from tokens 0..t-1. This is training's
// forward without the backward:
//
//   inputs  = ids[0 .. n-2]        labels = ids[1 .. n-1]    (shifted by one)
//   nll_t   = -log softmax(logits[t-1])[ids[t]]              (cross-entropy per position)
//   loss    = sum of nll_t over every predicted token of the batch / their count
//   perplexity = exp(loss)
//
// which is Hugging Face's model(input_ids, attention_mask, labels).loss with labels = input_ids
// and pads set to -100 (transformers' ForCausalLMLoss: the mean over the non-ignored tokens of
// the whole batch, not a mean of per-row means). docs/score.md has the details and tolerances.
//
//   ScoreResult r = score_rows(decoder, {{504, 3575, 282, 4649}}, pad_id);
//   r.loss, r.rows[0].tokens[0].prob   // p(3575 | 504)
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/decoder.h"
#include "tensor/tensor.h"
#include "trace/hook_editor.h"
#include "tokenizer/ids_text.h"   // PieceFn

namespace lmscope {

struct TokenScore {
  int64_t position = 0;     // t >= 1: the token at t, predicted from the logits at t-1
  int32_t id = 0;
  double logprob = 0;       // log p(id | tokens before t), computed in double
  double nll = 0;           // -logprob: this position's cross-entropy
  int32_t top_id = 0;       // the model's own first choice at t (argmax of the logits at t-1)
  double top_logprob = 0;
};

struct RowScore {
  std::vector<int32_t> ids;           // the row's tokens, no pads
  std::vector<TokenScore> tokens;     // positions 1 .. n-1
  double nll_sum = 0;
  double mean_nll() const { return nll_sum / double(tokens.size()); }
};

struct ScoreResult {
  std::vector<RowScore> rows;
  int64_t n_predicted = 0;   // sum over rows of (tokens - 1)
  double loss = 0;           // sum of every row's nll_sum / n_predicted (HF's -100 mean)
  double perplexity = 0;     // exp(loss)
  std::string interventions_json;   // the edits of the forward (Interventions::record), "" for none
};

// Checks the rows (at least one; each >= 2 tokens, since a single token has nothing to predict;
// ids in [0, vocab_size)), pads them on the right with pad_id, runs one forward (no cache, all
// positions' logits) and scores them. Right padding keeps every real token at positions
// 0..n-1 as if alone, and no real label is predicted from a pad column.
// editor (interventions, --intervene): applied at its hook points of that forward.
ScoreResult score_rows(Decoder& decoder, const std::vector<std::vector<int32_t>>& rows, int32_t pad_id,
                       HookEditor* editor = nullptr);

// The arithmetic alone: logits [B,T,V] float32 of the right-padded rows -> scores.
ScoreResult score_logits(const Tensor& logits, const std::vector<std::vector<int32_t>>& rows);

// A summary over rows `from`..`to` (positions, inclusive) of one text: what a student computes
// by hand from the table, at fixed precision. Positions below 1 start at 1 (position 0 has no
// label); `to` past the end stops at the last. Throws std::runtime_error naming --range when
// nothing is left.
struct RangeSummary {
  int64_t text = 0, from = 0, to = 0;
  int64_t n = 0;               // labels in the range
  double mean_nll = 0;         // the loss restricted to the range (labels outside: -100)
  double perplexity = 0;       // exp(mean_nll)
  double mean_p = 0;           // the arithmetic mean of p: not exp(-mean_nll)
  int64_t top_right = 0;       // positions where the model's own first choice is the token
};
RangeSummary summarize_range(const ScoreResult& r, int64_t text, int64_t from, int64_t to);
// "3 tokens: mean NLL 6.13, perplexity 461\nmean p 0.0873, -ln(mean p) 2.44, top choice right 1 of 3\n"
std::string range_summary_text(const RangeSummary& s);

// The readable report and the JSON form. piece(id) shows a token ("␣Paris"); texts[b] is row
// b's text ("" where it was given as ids).
// `ranges` (summarize_range) follow the table, or go under "ranges" in the JSON.
std::string score_report_text(const ScoreResult& r, const std::vector<std::string>& texts, const PieceFn& piece,
                              const std::vector<RangeSummary>& ranges = {});
std::string score_report_json(const ScoreResult& r, const std::vector<std::string>& texts, const PieceFn& piece,
                              const std::vector<RangeSummary>& ranges = {});

}  // namespace lmscope
