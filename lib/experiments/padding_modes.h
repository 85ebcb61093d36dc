// The four ways lmscope-padding batches prompts (docs/experiments.md). Two are HF generate as
// it is (left, right_hf); two depart from it through generate()'s policies:
//
//   left         left padding, positions from the mask (HF generate; correct)
//   right_hf     right padding the way HF generate does it: the next token of every row read
//                from the LAST column (a pad for shorter rows), new tokens appended after the pads
//                and positioned after the last column's (a pad's 0)
//   right_aware  right padding done correctly: each row's next token read at its own last real
//                token, new tokens positioned at the row's own length (the pads stay masked)
//   left_colpos  left padding with column indices as positions (what a forward() without
//                position_ids does): every real token is shifted by the row's pad count
#pragma once
#include <string>
#include <vector>

#include "generate/generator.h"

namespace lmscope {

enum class PaddingMode { Left, RightHf, RightAware, LeftColpos };
const char* padding_mode_name(PaddingMode m);            // "left", "right_hf", ...
PaddingMode parse_padding_mode(const std::string& name);  // throws one line naming the choices
const std::vector<PaddingMode>& all_padding_modes();
// `base` (prompts, sampling, ...) batched the way `m` says.
GenerateOptions with_padding_mode(GenerateOptions base, PaddingMode m);

// right_aware's read_next: the row's last REAL column, and only its real ids as the context.
NextTokenSite last_real_token_site(const Batch& batch, int64_t row, int64_t logits_cols);
// left_colpos's place_prompt: every column's position is its index, pads included.
void column_index_positions(Batch& batch);

}  // namespace lmscope
