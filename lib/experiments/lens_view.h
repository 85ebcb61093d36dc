// The logit lens as a table a student reads (lmscope-lens, docs/lens.md): for each position
// that predicts a token, what every layer's lens (model/lens.h) puts first, and from which
// layer on that is the token the model finally chose.
//
//   LensCollector c(prompt_len);          // a TraceSink: run_traced(..., hooks, "", &c)
//   auto cols = c.columns(prompt, new_tokens);
//   std::cout << lens_table_text(cols, piece, /*top=*/1);
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tokenizer/ids_text.h"   // PieceFn
#include "trace/trace.h"

namespace lmscope {

struct LensLayer {
  int layer = 0;
  std::vector<int32_t> ids;   // top K, most probable first
  std::vector<float> probs;
};

// One position whose next token the model predicted: the prompt's last position (the prefill)
// and each decode step's.
struct LensColumn {
  int step = 0;
  int64_t position = 0;       // in the sequence: prompt, then generated tokens
  int32_t input_id = 0;       // the token at that position
  int32_t chosen_id = 0;      // the token generation appended after it
  std::vector<LensLayer> layers;   // the traced layers, in order
  // The first layer from which on every traced layer's top token is chosen_id (-1: none,
  // not even the last), and the first layer where it is top at all.
  int settles_at() const;
  int first_top() const;
};

// Keeps, from lens.layers.L.topk_ids / topk_probs of every step, batch row 0's last column.
class LensCollector : public TraceSink {
 public:
  void begin_step(const StepInfo& info) override { step_ = info.step; }
  void offer(Hook h, int layer, const Tensor& t) override;
  // Joins what was collected with the run's tokens: prompt ids and the generated ids.
  std::vector<LensColumn> columns(const std::vector<int32_t>& prompt, const std::vector<int32_t>& generated) const;

 private:
  int step_ = 0;
  std::map<std::pair<int, int>, LensLayer> got_;   // (step, layer)
};

// top == 1: one grid, a row per layer and a column per position, each cell the top token and
// its probability. top > 1: one block per position, the top entries side by side.
std::string lens_table_text(const std::vector<LensColumn>& cols, const PieceFn& piece, int top);
std::string lens_json(const std::vector<LensColumn>& cols, const PieceFn& piece);

}  // namespace lmscope
