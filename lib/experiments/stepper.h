// lmscope-trace --step: walk a prompt stage by stage in the terminal, as the forward offers its
// tensors (a TraceSink): the tokenizer's merges, tokens / positions / masks drawn as grids,
// embeddings, each layer's q/k before and after RoPE, attention probabilities as a heatmap per
// head, FFN gate/up/act statistics, the top-10 next tokens with their probabilities, and each
// sampling decision (temperature, top-k/top-p cut, the draw, the choice).
//
// Interactive (a terminal on both ends): after each page, Enter (or space) shows the next one,
// `n` jumps to the next layer, `s` to the next step, `q` quits (StepperQuit is thrown out of the
// forward; the tool catches it). Otherwise every page is printed, one after the other.
#pragma once
#include <cstdio>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "generate/sampler.h"
#include "model/config.h"
#include "trace/trace.h"
#include "trace/trace_reader.h"   // HookData

namespace lmscope {

struct EncodeTrace;

struct StepperQuit : std::runtime_error {
  StepperQuit() : std::runtime_error("quit") {}
};

struct StepperOptions {
  bool interactive = false;
  int in_fd = 0;                    // keys are read from here (raw mode while walking)
  std::FILE* out = stdout;
  int row = 0;                      // the batch row whose per-layer tensors are drawn (clamped into the batch)
  int max_cols = 40;                // heatmaps show at most the last max_cols key positions
  int max_rows = 24;                // ... and the last max_rows query positions
  SamplingConfig sampling;          // shown on the sampling pages
  std::function<std::string(int32_t)> token_text;   // id -> readable token (may be empty)
  std::vector<std::string> intro_pages;              // shown first (the tokenizer's merges)
};

class Stepper : public TraceSink {
 public:
  Stepper(const ModelConfig& cfg, StepperOptions opt);
  ~Stepper() override;
  Stepper(const Stepper&) = delete;
  Stepper& operator=(const Stepper&) = delete;

  void begin_step(const StepInfo& info) override;
  void offer(Hook h, int layer, const Tensor& t) override;
  // Shows the pages not shown yet (the intro, when nothing ran) and the closing line.
  void finish();


 private:
  void page(const std::string& title, const std::string& body, int layer);
  const HookData* get(const std::string& name) const;
  std::string tok(int32_t id) const;
  std::string page_inputs() const;
  std::string page_embed() const;
  std::string page_rope(int layer) const;
  std::string page_attention(int layer) const;
  std::string page_ffn(int layer) const;
  std::string page_logits() const;
  std::string page_sampling() const;

  ModelConfig cfg_;
  StepperOptions opt_;
  StepInfo info_;
  std::map<std::string, HookData> cur_;   // this step's tensors
  int pages_shown_ = 0;
  bool intro_done_ = false;
  int skip_below_layer_ = -1;   // `n`: pages of layers < this are skipped
  bool skip_step_ = false;      // `s`: the rest of this step is skipped
  bool raw_ = false;
  void* saved_termios_ = nullptr;
};

// The intro page of one prompt: its words and each word's merges, from an EncodeTrace
// (lib/tokenizer). token_text names ids readably.
std::string render_merges_page(const EncodeTrace& trace, const std::function<std::string(int32_t)>& token_text);

// Terminal drawings, exposed for tests.
// A [rows x cols] grid of values in [0,1] (NaN = masked) with shade characters, two per cell.
std::string shade_grid(const std::vector<double>& values, int64_t rows, int64_t cols,
                       const std::vector<std::string>& row_labels, int64_t col_offset);

}  // namespace lmscope
