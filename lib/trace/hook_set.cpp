#include "trace/hook_set.h"

#include <stdexcept>

namespace lmscope {

std::vector<int> parse_layer_ranges(const std::string& text, int num_layers) {
  std::vector<int> layers;
  try {
    layers = parse_ranges(text);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("--layers: " + std::string(e.what()));
  }
  for (int l : layers)
    if (l >= num_layers)
      throw std::runtime_error("--layers: layer " + std::to_string(l) + " does not exist (the model has " +
                               std::to_string(num_layers) + " layers: 0-" + std::to_string(num_layers - 1) + ")");
  return layers;
}

HookSet::HookSet(const std::string& globs, const std::string& layers, int num_layers)
    : num_layers_(num_layers) {
  std::vector<char> layer_ok(std::max(num_layers, 1), layers.empty() ? 1 : 0);
  if (!layers.empty())
    for (int l : parse_layer_ranges(layers, num_layers)) layer_ok[l] = 1;

  std::vector<std::string> patterns = split_list(globs.empty() ? "*" : globs);
  // An opt-in hook (hooks.h) answers only a glob that starts with its own first name part.
  auto reaches = [](const std::string& pat, const HookInfo& info) {
    if (!info.opt_in) return true;
    const std::string name = info.pattern;
    return pat.compare(0, name.find('.') + 1, name, 0, name.find('.') + 1) == 0;
  };

  for (const std::string& pat : patterns) {
    bool matched = false;
    for (const HookInfo& info : all_hooks()) {
      auto& row = table_[int(info.id)];
      if (row.empty()) row.assign(info.per_layer ? std::max(num_layers, 1) : 1, 0);
      if (!reaches(pat, info)) continue;
      if (!info.per_layer) {
        if (glob_match(pat, info.pattern)) row[0] = 1, matched = true;
        continue;
      }
      for (int l = 0; l < num_layers; ++l) {
        if (!glob_match(pat, hook_name(info.id, l))) continue;
        matched = true;   // it names a hook even if --layers then excludes that layer
        if (layer_ok[l]) row[l] = 1;
      }
    }
    if (!matched)
      throw std::runtime_error("--hooks: '" + pat + "' names no known hook (see docs/hooks.md; e.g. "
                               "'layers.*.attn.q_rope,logits')");
  }
  for (const auto& row : table_)
    for (char c : row) any_ = any_ || c;
  // Rows left empty are hooks no pattern touched: make them all-false of the right size.
  for (const HookInfo& info : all_hooks()) {
    auto& row = table_[int(info.id)];
    if (row.empty()) row.assign(info.per_layer ? std::max(num_layers, 1) : 1, 0);
  }
}

void HookSet::set_lens_top_k(int k) {
  if (k < 1) throw std::runtime_error("--lens: the number of top tokens must be at least 1, got " + std::to_string(k));
  lens_top_k_ = k;
}

std::vector<std::string> HookSet::enabled_names() const {
  std::vector<std::string> names;
  for (const HookInfo& info : all_hooks()) {
    if (!info.per_layer) {
      if (enabled(info.id, -1)) names.push_back(info.pattern);
      continue;
    }
  }
  // per-layer hooks layer-major, in table order within a layer
  for (int l = 0; l < num_layers_; ++l)
    for (const HookInfo& info : all_hooks())
      if (info.per_layer && enabled(info.id, l)) names.push_back(hook_name(info.id, l));
  return names;
}

}  // namespace lmscope
