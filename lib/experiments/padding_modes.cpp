#include "experiments/padding_modes.h"

#include <stdexcept>

namespace lmscope {

const char* padding_mode_name(PaddingMode m) {
  switch (m) {
    case PaddingMode::Left: return "left";
    case PaddingMode::RightHf: return "right_hf";
    case PaddingMode::RightAware: return "right_aware";
    case PaddingMode::LeftColpos: return "left_colpos";
  }
  return "?";
}

const std::vector<PaddingMode>& all_padding_modes() {
  static const std::vector<PaddingMode> modes = {PaddingMode::Left, PaddingMode::RightHf, PaddingMode::RightAware,
                                                 PaddingMode::LeftColpos};
  return modes;
}

PaddingMode parse_padding_mode(const std::string& name) {
  for (PaddingMode m : all_padding_modes())
    if (name == padding_mode_name(m)) return m;
  throw std::runtime_error("--modes: '" + name + "' is not one of left, right_hf, right_aware, left_colpos");
}

GenerateOptions with_padding_mode(GenerateOptions o, PaddingMode m) {
  o.policies.read_next = nullptr;
  o.policies.place_prompt = nullptr;
  switch (m) {
    case PaddingMode::Left: o.padding_side = PaddingSide::Left; break;
    case PaddingMode::RightHf: o.padding_side = PaddingSide::Right; break;
    case PaddingMode::RightAware:
      o.padding_side = PaddingSide::Right;
      o.policies.read_next = last_real_token_site;
      break;
    case PaddingMode::LeftColpos:
      o.padding_side = PaddingSide::Left;
      o.policies.place_prompt = column_index_positions;
      break;
  }
  return o;
}

NextTokenSite last_real_token_site(const Batch& batch, int64_t row, int64_t logits_cols) {
  const auto& ids = batch.ids[size_t(row)];
  const auto& mask = batch.mask[size_t(row)];
  int64_t s = batch.cols() - 1;
  while (s > 0 && mask[size_t(s)] == 0) --s;
  NextTokenSite site;
  site.column = s - (batch.cols() - logits_cols);   // the logits cover the last logits_cols columns
  site.position = batch.pos[size_t(row)][size_t(s)];
  for (size_t i = 0; i < ids.size(); ++i)
    if (mask[i]) site.context.push_back(ids[i]);
  return site;
}

void column_index_positions(Batch& batch) {
  for (auto& row : batch.pos)
    for (size_t s = 0; s < row.size(); ++s) row[s] = int32_t(s);
}

}  // namespace lmscope
