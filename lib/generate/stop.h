// When a row stops generating, as HF generate decides it (docs/sampling.md, "Stop conditions"):
// EosTokenCriteria (the token is one of the eos ids: generation_config's list, or the GGUF /
// config ids), StopStringCriteria (a stop string ends inside the token just generated), and
// max_new_tokens. The reason is recorded per row (trace root attribute `stop_reasons`).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lmscope {

enum class StopReason { None, Eos, StopString, MaxNewTokens };
const char* stop_reason_name(StopReason r);   // "", "eos", "stop_string", "max_new_tokens"

// HF StopStringCriteria in its byte-level mode (the mode transformers 5.x picks for byte-level
// BPE vocabularies): each token is its bytes, and a row stops when one of the strings occurs
// in the bytes of the whole row (prompt, pads included, as HF reads input_ids, then the new
// tokens) and that occurrence ENDS inside the newest token. So a string split across tokens
// matches ("\n" + "\n" for "\n\n"), a token may overhang the string's end (" stop" + "ped" for
// " stopp"), and an occurrence entirely inside earlier tokens (e.g. in the prompt) never
// matches. The token that completes the string is kept, as in HF.
class StopStringMatcher {
 public:
  // Throws std::invalid_argument for an empty string (HF accepts "" and stops every row after
  // its first token; a user never means that). rows: each row's ids so far, pads included.
  StopStringMatcher(std::vector<std::string> strings, std::function<std::string(int32_t)> token_bytes,
                    const std::vector<std::vector<int32_t>>& rows);
  // Appends `token` to row `row`; true when a stop string ends inside it.
  bool push(size_t row, int32_t token);

 private:
  std::vector<std::string> strings_;
  std::function<std::string(int32_t)> token_bytes_;
  size_t keep_ = 0;                 // bytes of history a match can reach back into
  std::vector<std::string> tails_;  // per row: its last keep_ bytes
};

}  // namespace lmscope
