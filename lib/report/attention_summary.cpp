#include "report/attention_summary.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

namespace lmscope {

std::string attention_summary(const TraceReader& tr, const nlohmann::json& columns, int step, int row, int query) {
  auto label = [&](int64_t s) {
    if (s < 0 || size_t(s) >= columns.size()) return std::to_string(s);
    const nlohmann::json& c = columns[size_t(s)];
    return std::string("\u201c") + (c.value("pad", false) ? "PAD" : c["piece"].get<std::string>()) + "\u201d";
  };
  std::ostringstream o;
  std::map<int64_t, int> picks;   // key column -> heads whose most-attended key it is
  int heads = 0;
  bool header = false;
  for (int L = 0;; ++L) {
    const std::string hook = "layers." + std::to_string(L) + ".attn.probs";
    if (!tr.has_hook(step, hook)) {
      if (L > 0 && heads > 0) break;
      if (L >= 1024) break;
      continue;
    }
    HookData d = tr.read(step, hook);   // [B,H,T,S]
    const int64_t B = d.shape[0], H = d.shape[1], T = d.shape[2], S = d.shape[3];
    if (row < 0 || row >= B) throw std::runtime_error("--row " + std::to_string(row) + ": the trace has " + std::to_string(B) + " row(s)");
    const int64_t q = query < 0 ? T - 1 : query;
    if (q >= T) throw std::runtime_error("--query " + std::to_string(query) + ": step " + std::to_string(step) + " has " + std::to_string(T) + " query positions");
    const int64_t past = tr.step_info(step).past_length;
    if (!header) {
      o << "attention at step " << step << ", row " << row << ", query " << past + q << " " << label(past + q)
        << ": each head's most-attended key token (its probability)\n";
      header = true;
    }
    char buf[96];
    std::snprintf(buf, sizeof buf, "layer %2d:", L);
    o << buf;
    for (int64_t h = 0; h < H; ++h) {
      const double* p = d.values.data() + ((row * H + h) * T + q) * S;
      const int64_t best = std::max_element(p, p + S) - p;
      std::snprintf(buf, sizeof buf, " %.2f", p[best]);
      o << " " << label(best) << buf;
      ++picks[best];
      ++heads;
    }
    o << "\n";
  }
  if (heads == 0)
    throw std::runtime_error("step " + std::to_string(step) + " has no layers.*.attn.probs; trace with --hooks 'layers.*.attn.probs'");
  std::vector<std::pair<int, int64_t>> order;
  for (const auto& [col, n] : picks) order.push_back({n, col});
  std::sort(order.begin(), order.end(), [](auto a, auto b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  o << "heads by most-attended key (of " << heads << "):";
  for (const auto& [n, col] : order) o << " column " << col << " " << label(col) << ": " << n << ";";
  o << "\n";
  return o.str();
}

}  // namespace lmscope
