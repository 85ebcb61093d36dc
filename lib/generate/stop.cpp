#include "generate/stop.h"

#include <algorithm>
#include <stdexcept>

namespace lmscope {

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::Eos: return "eos";
    case StopReason::StopString: return "stop_string";
    case StopReason::MaxNewTokens: return "max_new_tokens";
    case StopReason::None: break;
  }
  return "";
}

StopStringMatcher::StopStringMatcher(std::vector<std::string> strings, std::function<std::string(int32_t)> token_bytes,
                                     const std::vector<std::vector<int32_t>>& rows)
    : strings_(std::move(strings)), token_bytes_(std::move(token_bytes)) {
  if (!token_bytes_) throw std::invalid_argument("stop strings need the tokenizer's token bytes");
  for (const std::string& s : strings_) {
    if (s.empty()) throw std::invalid_argument("a stop string is empty (it would match nothing)");
    keep_ = std::max(keep_, s.size() - 1);   // a match ending in the new token starts at most this far back
  }
  for (const auto& ids : rows) {
    std::string text;
    for (int32_t id : ids) text += token_bytes_(id);
    tails_.push_back(text.size() > keep_ ? text.substr(text.size() - keep_) : text);
  }
}

bool StopStringMatcher::push(size_t row, int32_t token) {
  std::string& tail = tails_.at(row);
  const size_t start = tail.size();   // where the new token's bytes begin
  tail += token_bytes_(token);
  const size_t end = tail.size();
  bool hit = false;
  for (const std::string& s : strings_) {
    const size_t L = s.size();
    if (end < L) continue;
    // the first occurrence ending after `start`; the match must also end by `end`
    const size_t from = start + 1 > L ? start + 1 - L : 0;
    const size_t pos = tail.find(s, from);
    if (pos != std::string::npos && pos + L <= end) hit = true;
  }
  if (tail.size() > keep_) tail.erase(0, tail.size() - keep_);
  return hit;
}

}  // namespace lmscope
