// HookSet: which hooks a run asked for. Built once from `--hooks` globs and `--layers`
// ranges into a table, so the forward's question "is layers.3.attn.q wanted?" is one lookup.
#pragma once
#include <string>
#include <vector>

#include "trace/hooks.h"
#include "trace/select.h"

namespace lmscope {

class HookSet {
 public:
  HookSet() = default;   // nothing enabled
  // globs: comma-separated ("layers.*.attn.q_rope,logits"; '*' matches dots too, '?' one
  // char); empty or "*" = every hook but the opt-in ones (lens.*: only a glob starting with
  // "lens." selects them). layers: "0-3,7" or "" for all.
  // Throws std::runtime_error("--hooks: 'x' names no known hook ...") for a glob that matches
  // nothing, and for a malformed or out-of-range --layers.
  HookSet(const std::string& globs, const std::string& layers, int num_layers);
  static HookSet all(int num_layers) { return HookSet("*", "", num_layers); }

  bool enabled(Hook h, int layer) const {
    const auto& row = table_[int(h)];
    return !row.empty() && row[layer < 0 ? 0 : layer];
  }
  bool any() const { return any_; }
  // How many tokens lens.layers.L.topk_ids / topk_probs keep per position (clamped to V).
  int lens_top_k() const { return lens_top_k_; }
  void set_lens_top_k(int k);
  // Every enabled hook name ("layers.0.attn.q", ...), in forward order.
  std::vector<std::string> enabled_names() const;

 private:
  std::vector<std::vector<char>> table_ = std::vector<std::vector<char>>(int(Hook::Count));
  int num_layers_ = 0;
  bool any_ = false;
  int lens_top_k_ = 10;
};

// "0-3,7" -> {0,1,2,3,7}; throws on malformed text or a layer >= num_layers.
std::vector<int> parse_layer_ranges(const std::string& text, int num_layers);

}  // namespace lmscope
