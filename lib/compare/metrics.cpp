#include "compare/metrics.h"

#include <cmath>
#include <limits>
#include <sstream>

namespace lmscope {

Metrics compute_metrics(const std::vector<double>& a, const std::vector<double>& ref,
                        const std::vector<uint8_t>& include) {
  Metrics m;
  const double inf = std::numeric_limits<double>::infinity();
  double dot = 0, na = 0, nb = 0;
  size_t n = std::min(a.size(), ref.size());
  auto note = [&](size_t i, double err) {   // the first of equal maxima wins
    if (err > m.max_abs) {
      m.max_abs = err;
      m.argmax = int64_t(i);
      m.value = a[i];
      m.ref = ref[i];
    }
  };
  for (size_t i = 0; i < n; ++i) {
    if (!include.empty() && !include[i]) {
      ++m.skipped_pad;
      continue;
    }
    double x = a[i], y = ref[i];
    bool mx = is_masked(x), my = is_masked(y);
    if (mx && my) {
      ++m.masked_both;
      continue;
    }
    ++m.compared;
    bool fx = std::isfinite(x), fy = std::isfinite(y);
    if (mx != my || !fx || !fy) {
      // NaN == NaN and +inf == +inf count as agreement; anything else one-sided is a miss.
      bool same = !mx && !my && ((std::isnan(x) && std::isnan(y)) || (!std::isnan(x) && x == y));
      if (!same) {
        ++m.mismatched_special;
        note(i, inf);
      }
      continue;
    }
    double err = std::fabs(x - y);
    note(i, err);
    m.scale = std::max(m.scale, std::fabs(y));
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  m.rel = m.scale > 0 ? m.max_abs / m.scale : 0;
  if (na == 0 && nb == 0) m.cosine = 1;
  else if (na == 0 || nb == 0) m.cosine = 0;
  else m.cosine = dot / std::sqrt(na * nb);
  return m;
}

std::vector<uint8_t> pad_include_mask(const std::string& hook, const std::vector<std::string>& axes,
                                      const Shape& shape, const HookData* attention_mask) {
  if (!attention_mask || attention_mask->shape.size() != 2 || axes.size() != shape.size()) return {};
  auto find = [&](const char* name) {
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i] == name) return int(i);
    return -1;
  };
  int bi = find("B"), ti = find("T"), si = find("S");
  const int64_t B = attention_mask->shape[0], Sm = attention_mask->shape[1];
  if (bi < 0 || shape[bi] != B) return {};
  const std::vector<double>& mask = attention_mask->values;
  // Query row t of this step is key position Sm - T + t (the last T positions).
  bool rows = ti >= 0 && shape[ti] <= Sm;
  bool cols = si >= 0 && hook.rfind("kv.", 0) == 0 && shape[si] == Sm;
  if (!rows && !cols) return {};
  const int64_t T = ti >= 0 ? shape[ti] : 0;

  std::vector<int64_t> stride(shape.size(), 1);
  for (int i = int(shape.size()) - 2; i >= 0; --i) stride[i] = stride[i + 1] * shape[i + 1];
  const int64_t n = shape_numel(shape);
  std::vector<uint8_t> inc(size_t(n), 1);
  bool any_skipped = false;
  for (int64_t i = 0; i < n; ++i) {
    int64_t b = (i / stride[bi]) % shape[bi];
    bool keep = true;
    if (rows) keep = mask[size_t(b * Sm + Sm - T + (i / stride[ti]) % T)] == 1;
    if (keep && cols) keep = mask[size_t(b * Sm + (i / stride[si]) % shape[si])] == 1;
    if (!keep) {
      inc[size_t(i)] = 0;
      any_skipped = true;
    }
  }
  if (!any_skipped) return {};
  return inc;
}

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (int i = int(shape.size()) - 1; i >= 0 && flat >= 0; --i) {
    if (shape[i] == 0) break;
    idx[i] = flat % shape[i];
    flat /= shape[i];
  }
  return idx;
}

std::string index_str(const std::vector<int64_t>& idx) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < idx.size(); ++i) o << (i ? "," : "") << idx[i];
  o << "]";
  return o.str();
}

}  // namespace lmscope
