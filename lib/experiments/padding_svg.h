// The padding picture for a slide (padding.svg of lmscope-padding): for each mode, the padded
// batch as a grid (rows x columns, PAD cells marked, each row's real tokens), the padding mask
// bit of every cell, the column each row reads its next token from, and whether the row then
// matches its solo run or where it departs. Sized for 1280 x 720.
#pragma once
#include <string>

#include "experiments/padding.h"

namespace lmscope {

std::string padding_svg(const PaddingReport& r, const ModelContext& m);

}  // namespace lmscope
