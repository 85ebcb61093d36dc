#include "generate/batch.h"

#include <stdexcept>

namespace lmscope {

PaddingSide parse_padding_side(const std::string& s) {
  if (s == "left") return PaddingSide::Left;
  if (s == "right") return PaddingSide::Right;
  throw std::runtime_error("--padding-side: '" + s + "' is not 'left' or 'right'");
}

const char* padding_side_name(PaddingSide s) { return s == PaddingSide::Left ? "left" : "right"; }

Batch Batch::from_prompts(const std::vector<std::vector<int32_t>>& prompts, PaddingSide side,
                          int32_t pad_id) {
  if (prompts.empty()) throw std::runtime_error("no prompt given");
  if (prompts.size() > kMaxBatchRows)
    throw std::runtime_error(std::to_string(prompts.size()) + " prompts: one run takes at most " +
                             std::to_string(kMaxBatchRows) + " (they form one batch); split them over several runs");
  size_t width = 0;
  for (const auto& p : prompts) {
    if (p.empty()) throw std::runtime_error("a prompt has no tokens");
    width = std::max(width, p.size());
  }
  Batch b;
  for (const auto& p : prompts) {
    const size_t pads = width - p.size();
    std::vector<int32_t> ids, mask;
    if (side == PaddingSide::Left) ids.assign(pads, pad_id), mask.assign(pads, 0);
    ids.insert(ids.end(), p.begin(), p.end());
    mask.insert(mask.end(), p.size(), 1);
    if (side == PaddingSide::Right) ids.insert(ids.end(), pads, pad_id), mask.insert(mask.end(), pads, 0);
    std::vector<int32_t> pos;
    int32_t running = 0;
    for (int32_t m : mask) {
      running += m;
      pos.push_back(m ? running - 1 : 0);
    }
    b.ids.push_back(std::move(ids));
    b.mask.push_back(std::move(mask));
    b.pos.push_back(std::move(pos));
  }
  return b;
}

void Batch::append(const std::vector<int32_t>& column, const std::vector<int32_t>& positions) {
  for (size_t r = 0; r < ids.size(); ++r) {
    ids[r].push_back(column.at(r));
    mask[r].push_back(1);
    pos[r].push_back(positions.empty() ? pos[r].back() + 1 : positions.at(r));
  }
}

static Tensor columns(const std::vector<std::vector<int32_t>>& rows, int64_t from) {
  const int64_t B = int64_t(rows.size()), S = int64_t(rows[0].size());
  Tensor t = Tensor::zeros({B, S - from}, DType::I32);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = from; s < S; ++s) t.i32()[b * (S - from) + (s - from)] = rows[b][s];
  return t;
}

Tensor Batch::ids_tensor(int64_t from) const { return columns(ids, from); }
Tensor Batch::mask_tensor() const { return columns(mask, 0); }

Tensor Batch::position_ids(int64_t from) const { return columns(pos, from); }

}  // namespace lmscope
