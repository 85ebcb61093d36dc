#include "grad/metric.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace lmscope {

namespace {

[[noreturn]] void bad(const MetricSpec& s, const std::string& why) {
  throw std::invalid_argument(s.option + " '" + s.text + "': " + why);
}

// "-1" -> -1; throws for anything but an optional '-' and digits.
int64_t parse_int(const MetricSpec& s, const std::string& text, const char* what) {
  size_t i = text.size() > 1 && text[0] == '-' ? 1 : 0;
  if (text.empty() || i == text.size() || text.find_first_not_of("0123456789", i) != std::string::npos ||
      text.size() > 18)
    bad(s, std::string(what) + " '" + text + "' is not an integer");
  return std::stoll(text);
}

// "pos=-1" -> -1
int64_t parse_pos(const MetricSpec& s, const std::string& field) {
  if (field.rfind("pos=", 0) != 0) bad(s, "expected pos=P, got '" + field + "'");
  return parse_int(s, field.substr(4), "pos");
}

// "A,B" with optional double quotes around a token (which may then hold ',' and ':').
std::vector<std::string> split_tokens(const MetricSpec& s, const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : text) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (quoted) bad(s, "unterminated quote");
  out.push_back(cur);
  for (const std::string& t : out)
    if (t.empty()) bad(s, "an empty token");
  return out;
}

// Splits "kind:a:b" at its first two ':' outside quotes.
std::vector<std::string> split_fields(const std::string& spec) {
  std::vector<std::string> f(1);
  bool quoted = false;
  for (char c : spec) {
    if (c == '"') quoted = !quoted;
    if (c == ':' && !quoted && f.size() < 3) {
      f.emplace_back();
      continue;
    }
    f.back() += c;
  }
  return f;
}

double log_sum_exp(const float* row, int64_t V) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < V; ++i) mx = std::max(mx, double(row[i]));
  double sum = 0;
  for (int64_t i = 0; i < V; ++i) sum += std::exp(double(row[i]) - mx);
  return mx + std::log(sum);
}

// d/dlogits of weight * log softmax(row)[id]: weight * (onehot(id) - softmax(row)), added to g.
void add_logprob_grad(float* g, const float* row, int64_t V, int32_t id, double lse, double weight) {
  for (int64_t i = 0; i < V; ++i) g[i] += float(-weight * std::exp(double(row[i]) - lse));
  g[id] += float(weight);
}

}  // namespace

MetricSpec parse_metric(const std::string& text, const std::string& option) {
  MetricSpec s;
  s.text = text;
  s.option = option;
  const std::vector<std::string> f = split_fields(text);
  const std::string& kind = f[0];
  if (kind == "logit_diff" || kind == "logprob" || kind == "prob") {
    s.kind = kind == "logit_diff" ? MetricSpec::Kind::LogitDiff
             : kind == "logprob"  ? MetricSpec::Kind::LogProb
                                  : MetricSpec::Kind::Prob;
    if (f.size() != 3) bad(s, "expected " + kind + ":pos=P:" + (kind == "logit_diff" ? "A,B" : "A"));
    s.pos = parse_pos(s, f[1]);
    s.tokens = split_tokens(s, f[2]);
    const size_t want = s.kind == MetricSpec::Kind::LogitDiff ? 2 : 1;
    if (s.tokens.size() != want)
      bad(s, kind + " takes " + std::to_string(want) + " token" + (want > 1 ? "s" : "") + ", got " +
                 std::to_string(s.tokens.size()));
  } else if (kind == "loss") {
    s.kind = MetricSpec::Kind::Loss;
    if (f.size() != 3) bad(s, "expected loss:FROM:TO (either may be empty)");
    if ((s.has_from = !f[1].empty())) s.from = parse_int(s, f[1], "FROM");
    if ((s.has_to = !f[2].empty())) s.to = parse_int(s, f[2], "TO");
    if ((s.has_from && s.from < 0) || (s.has_to && s.to < 0)) bad(s, "FROM and TO count from 0");
  } else {
    bad(s, "unknown metric '" + kind + "' (logit_diff:pos=P:A,B, logprob:pos=P:A, prob:pos=P:A or loss:FROM:TO)");
  }
  return s;
}

void resolve_metric_tokens(MetricSpec& s, int64_t vocab, const EncodeFn& encode) {
  s.ids.clear();
  for (const std::string& t : s.tokens) {
    int64_t id;
    if (t.find_first_not_of("0123456789") == std::string::npos && t.size() <= 10) {
      id = std::stoll(t);
    } else {
      if (!encode) bad(s, "token '" + t + "' is text, and there is no tokenizer: give an id");
      const std::vector<int32_t> ids = encode(t);
      if (ids.size() != 1)
        bad(s, "'" + t + "' encodes to " + std::to_string(ids.size()) + " tokens, not one");
      id = ids[0];
    }
    if (id < 0 || id >= vocab)
      bad(s, "token id " + std::to_string(id) + " is outside the vocabulary (" + std::to_string(vocab) + ")");
    s.ids.push_back(int32_t(id));
  }
}

namespace {

// The metric of one row's `len` prompt tokens: logits [len,V] and ids [len] from the row's first
// real column; d metric / d logits added to `grad` ([len,V], the same columns) when given.
// `row` names the row in errors.
double row_metric(const MetricSpec& s, const float* logits, const int32_t* ids, int64_t len, int64_t V, float* grad,
                  int64_t row) {
  // The column of prompt position p (negative: from the end).
  auto column = [&](int64_t p) {
    const int64_t q = p < 0 ? len + p : p;
    if (q < 0 || q >= len)
      bad(s, "position " + std::to_string(p) + " is outside the prompt (row " + std::to_string(row) + " has " +
                 std::to_string(len) + " tokens)");
    return q;
  };
  auto at = [&](int64_t col) { return logits + col * V; };
  double value = 0;
  if (s.kind == MetricSpec::Kind::LogitDiff) {
    const int64_t c = column(s.pos);
    value = double(at(c)[s.ids[0]]) - double(at(c)[s.ids[1]]);
    if (grad) {
      grad[c * V + s.ids[0]] += 1.0f;
      grad[c * V + s.ids[1]] -= 1.0f;
    }
  } else if (s.kind == MetricSpec::Kind::LogProb || s.kind == MetricSpec::Kind::Prob) {
    const int64_t c = column(s.pos);
    const double lse = log_sum_exp(at(c), V);
    const double logp = double(at(c)[s.ids[0]]) - lse;
    // d p / d logits = p (onehot - softmax): the log-prob's gradient weighted by p
    value = s.kind == MetricSpec::Kind::LogProb ? logp : std::exp(logp);
    if (grad) add_logprob_grad(grad + c * V, at(c), V, s.ids[0], lse, s.kind == MetricSpec::Kind::LogProb ? 1.0 : value);
  } else {
    const int64_t from = s.has_from ? s.from : 0, to = s.has_to ? s.to : len - 1;
    if (!(from < to && to <= len - 1))
      bad(s, "the range [" + std::to_string(from) + ", " + std::to_string(to) + ") is outside the prompt's " +
                 std::to_string(len - 1) + " predicted positions (row " + std::to_string(row) + ")");
    const double w = 1.0 / double(to - from);
    for (int64_t c = from; c < to; ++c) {
      const int32_t next = ids[c + 1];
      const double lse = log_sum_exp(at(c), V);
      value -= w * (double(at(c)[next]) - lse);
      if (grad) add_logprob_grad(grad + c * V, at(c), V, next, lse, -w);
    }
  }
  return value;
}

void require_finite(const MetricSpec& s, double value) {
  if (!std::isfinite(value))
    bad(s, "the metric is " + std::string(std::isnan(value) ? "NaN" : "infinite") + " (non-finite logits?): no gradient");
}

}  // namespace

MetricGrad metric_and_grad(const MetricSpec& s, const Tensor& logits, const Tensor& input_ids,
                           const std::vector<int64_t>& lengths, bool left_padded) {
  const int64_t B = logits.dim(0), T = logits.dim(1), V = logits.dim(2);
  if (int64_t(lengths.size()) != B) throw std::logic_error("metric_and_grad: one length per row");
  MetricGrad out;
  out.dlogits = Tensor::zeros({B, T, V});
  for (int64_t b = 0; b < B; ++b) {
    const int64_t first = b * T + (left_padded ? T - lengths[b] : 0);   // the row's first real column, flat
    out.value += row_metric(s, logits.f32() + first * V, input_ids.i32() + first, lengths[b], V,
                            out.dlogits.f32() + first * V, b);
  }
  require_finite(s, out.value);
  return out;
}

double metric_value(const MetricSpec& s, const float* logits, const int32_t* ids, int64_t T, int64_t V) {
  const double v = row_metric(s, logits, ids, T, V, nullptr, 0);
  require_finite(s, v);
  return v;
}

}  // namespace lmscope
