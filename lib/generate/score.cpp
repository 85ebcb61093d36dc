#include "generate/score.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "generate/batch.h"
#include "generate/edited_forward.h"
#include "io/format_number.h"

namespace lmscope {

namespace {

// log softmax(z)[y] and the argmax of z, in double. Why double: log p = z_y - logsumexp(z), a
// difference of two numbers of the logits' size (~10-30) whose result can be ~1e-8 (a near-
// certain token); float32 keeps ~7 digits, so it would round such an NLL to 0 or to a multiple
// of ~2e-6. The sum under the log has V = 49152 terms (SmolLM2), and the loss is a mean of
// many NLLs; double keeps all of that far below the tolerance on the logits themselves.
struct LogSoftmaxAt {
  double logprob_y;
  int32_t top_id;
  double top_logprob;
};

LogSoftmaxAt log_softmax_at(const float* z, int64_t V, int32_t y) {
  int32_t top = 0;
  for (int64_t i = 1; i < V; ++i)
    if (z[i] > z[top]) top = int32_t(i);   // the first of equal maxima, as torch.argmax
  const double m = z[top];                  // subtracting the max keeps every exp() <= 1
  // sum exp(z_i - m) = 1 + tail, the top's own 1 kept out of the running sum: adding 49151
  // terms of 1e-13 one by one to 1 would round each of them at 1's spacing (2.2e-16).
  double tail = 0;
  for (int64_t i = 0; i < V; ++i)
    if (i != top) tail += std::exp(double(z[i]) - m);
  // log p_y = (z_y - m) - log1p(tail): logsumexp = m + log(sum) is never formed, whose
  // rounding at m's size (~30) would swamp an NLL of 1e-9.
  const double log_sum = std::log1p(tail);
  return {(double(z[y]) - m) - log_sum, top, -log_sum};
}

void check_rows(const std::vector<std::vector<int32_t>>& rows, int64_t vocab) {
  if (rows.empty()) throw std::runtime_error("nothing to score: no text given");
  for (size_t b = 0; b < rows.size(); ++b) {
    if (rows[b].size() < 2)
      throw std::runtime_error("text " + std::to_string(b) + " has " + std::to_string(rows[b].size()) +
                               " token(s): nothing to predict (the loss needs at least 2 tokens)");
    for (int32_t id : rows[b])
      if (id < 0 || id >= vocab)
        throw std::runtime_error("token id " + std::to_string(id) + " is outside the vocabulary (" +
                                 std::to_string(vocab) + ")");
  }
}

}  // namespace

ScoreResult score_logits(const Tensor& logits, const std::vector<std::vector<int32_t>>& rows) {
  const int64_t B = logits.dim(0), T = logits.dim(1), V = logits.dim(2);
  check_rows(rows, V);
  if (int64_t(rows.size()) != B) throw std::logic_error("score_logits: logits and rows disagree on the batch size");
  ScoreResult r;
  double total = 0;
  for (int64_t b = 0; b < B; ++b) {
    const std::vector<int32_t>& ids = rows[size_t(b)];
    if (int64_t(ids.size()) > T) throw std::logic_error("score_logits: a row is longer than the logits");
    RowScore row;
    row.ids = ids;
    for (int64_t t = 1; t < int64_t(ids.size()); ++t) {   // labels shifted by one: t from t-1
      const LogSoftmaxAt s = log_softmax_at(logits.f32() + (b * T + t - 1) * V, V, ids[size_t(t)]);
      row.tokens.push_back({t, ids[size_t(t)], s.logprob_y, -s.logprob_y, s.top_id, s.top_logprob});
      row.nll_sum += -s.logprob_y;
    }
    total += row.nll_sum;
    r.n_predicted += int64_t(row.tokens.size());
    r.rows.push_back(std::move(row));
  }
  r.loss = total / double(r.n_predicted);   // one mean over all tokens: a long row weighs more
  r.perplexity = std::exp(r.loss);
  return r;
}

ScoreResult score_rows(Decoder& decoder, const std::vector<std::vector<int32_t>>& rows, int32_t pad_id,
                       HookEditor* editor) {
  check_rows(rows, decoder.config().vocab_size);
  // Positions past the model's table are RoPE angles it never saw (and each costs a row of
  // every activation): refused, as the generator refuses them.
  for (size_t b = 0; b < rows.size(); ++b)
    if (decoder.config().max_position_embeddings > 0 && int64_t(rows[b].size()) > decoder.config().max_position_embeddings)
      throw std::runtime_error("text " + std::to_string(b) + " has " + std::to_string(rows[b].size()) +
                               " tokens, more than max_position_embeddings " +
                               std::to_string(decoder.config().max_position_embeddings) + " (config.json)");
  // Right padding: cumsum(mask) - 1 gives each real token its position as if alone.
  const Batch batch = Batch::from_prompts(rows, PaddingSide::Right, pad_id);
  const StepInput in{batch.ids_tensor(), batch.position_ids(), batch.mask_tensor()};
  std::vector<int64_t> lengths;
  for (const auto& r : rows) lengths.push_back(int64_t(r.size()));
  const Tensor logits = forward_edited(decoder, in, editor, lengths, LogitsFor::AllPositions);
  return score_logits(logits, rows);
}

RangeSummary summarize_range(const ScoreResult& r, int64_t text, int64_t from, int64_t to) {
  if (text < 0 || text >= int64_t(r.rows.size())) throw std::logic_error("summarize_range: no such text");
  const RowScore& row = r.rows[size_t(text)];
  const int64_t last = int64_t(row.ids.size()) - 1;
  RangeSummary s;
  s.text = text, s.from = std::max<int64_t>(from, 1), s.to = std::min(to, last);
  if (s.from > s.to)
    throw std::runtime_error("--range " + std::to_string(from) + ":" + std::to_string(to) + " holds no label of text " +
                             std::to_string(text) + " (its labels are positions 1.." + std::to_string(last) + ")");
  double nll = 0, p = 0;
  for (const TokenScore& t : row.tokens) {
    if (t.position < s.from || t.position > s.to) continue;
    ++s.n, nll += t.nll, p += std::exp(t.logprob), s.top_right += t.top_id == t.id;
  }
  s.mean_nll = nll / double(s.n);
  s.perplexity = std::exp(s.mean_nll);
  s.mean_p = p / double(s.n);
  return s;
}

// ---- reports ------------------------------------------------------------------------------

namespace {

}  // namespace

std::string range_summary_text(const RangeSummary& s) {
  // 2 decimals (a perplexity of 100 or more as a whole number): the digits a lesson quotes,
  // which the last-bit differences between machines do not move.
  return std::to_string(s.n) + (s.n == 1 ? " token" : " tokens") + fmt(": mean NLL %.2f", s.mean_nll) +
         fmt(s.perplexity < 100 ? ", perplexity %.2f" : ", perplexity %.0f", s.perplexity) + "\n" +
         fmt("mean p %.3g", s.mean_p) + fmt(", -ln(mean p) %.2f", -std::log(s.mean_p)) + ", top choice right " +
         std::to_string(s.top_right) + " of " + std::to_string(s.n) + "\n";
}

std::string score_report_text(const ScoreResult& r, const std::vector<std::string>& texts, const PieceFn& piece,
                              const std::vector<RangeSummary>& ranges) {
  std::string out;
  for (size_t b = 0; b < r.rows.size(); ++b) {
    const RowScore& row = r.rows[b];
    const std::string& text = b < texts.size() ? texts[b] : std::string();
    out += "text " + std::to_string(b) + (text.empty() ? "" : ": \"" + text + "\"") + " (" +
           std::to_string(row.ids.size()) + " tokens)\n";
    out += "  pos  token                 p(token)         NLL   top choice            p(top)\n";
    // Position 0 is context only: no token before it predicts it.
    out += "    0  " + quoted_piece(piece(row.ids[0]), 20) + "         -           -\n";
    for (const TokenScore& s : row.tokens) {
      char pos[16];
      std::snprintf(pos, sizeof pos, "%5lld  ", (long long)s.position);
      out += pos + quoted_piece(piece(s.id), 20) + fmt("%10.6f", std::exp(s.logprob)) + fmt("%12.6f", s.nll) + "   " +
             quoted_piece(piece(s.top_id), 20) + fmt("%8.4f", std::exp(s.top_logprob)) +
             (s.top_id == s.id ? "  =" : "") + "\n";
    }
    if (r.rows.size() > 1)
      out += "  text " + std::to_string(b) + ": mean NLL " + fmt("%.6f", row.mean_nll()) + " over " +
             std::to_string(row.tokens.size()) + " predicted tokens, perplexity " +
             fmt("%.4f", std::exp(row.mean_nll())) + "\n";
  }
  out += "loss (mean NLL) " + fmt("%.6f", r.loss) + " over " + std::to_string(r.n_predicted) +
         " predicted tokens" + (r.rows.size() > 1 ? " of all texts" : "") + ", perplexity " +
         fmt("%.4f", r.perplexity) + "\n";
  for (const RangeSummary& s : ranges)
    out += "range " + std::to_string(s.from) + ":" + std::to_string(s.to) + " of text " + std::to_string(s.text) +
           ": " + range_summary_text(s);
  return out;
}

std::string score_report_json(const ScoreResult& r, const std::vector<std::string>& texts, const PieceFn& piece,
                              const std::vector<RangeSummary>& ranges) {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t b = 0; b < r.rows.size(); ++b) {
    const RowScore& row = r.rows[b];
    nlohmann::json toks = nlohmann::json::array();
    for (const TokenScore& s : row.tokens)
      toks.push_back({{"position", s.position}, {"id", s.id}, {"piece", piece(s.id)},
                      {"prob", std::exp(s.logprob)}, {"logprob", s.logprob}, {"nll", s.nll},
                      {"top_id", s.top_id}, {"top_piece", piece(s.top_id)}, {"top_prob", std::exp(s.top_logprob)}});
    rows.push_back({{"text", b < texts.size() ? texts[b] : std::string()}, {"ids", row.ids},
                    {"n_predicted", row.tokens.size()}, {"mean_nll", row.mean_nll()},
                    {"perplexity", std::exp(row.mean_nll())}, {"tokens", toks}});
  }
  nlohmann::json j = {{"rows", rows}, {"n_predicted", r.n_predicted}, {"loss", r.loss}, {"perplexity", r.perplexity}};
  if (!r.interventions_json.empty()) j["interventions"] = nlohmann::json::parse(r.interventions_json);
  if (!ranges.empty()) {
    j["ranges"] = nlohmann::json::array();
    for (const RangeSummary& s : ranges)
      j["ranges"].push_back({{"text", s.text}, {"from", s.from}, {"to", s.to}, {"n", s.n}, {"mean_nll", s.mean_nll},
                             {"perplexity", s.perplexity}, {"mean_p", s.mean_p}, {"top_right", s.top_right}});
  }
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lmscope
