// lmscope-trace --step: walk a prompt stage by stage in the terminal, as the forward offers its
// tensors (a TraceSink): the tokenizer's merges, tokens / positions / masks drawn as grids,
// embeddings, each layer's q/k before and after RoPE, attention probabilities as a heatmap per
// head, FFN gate/up/act statistics, the top-10 next tokens with their probabilities, and each
// sampling decision (temperature, top-k/top-p cut, the draw, the choice).
//
// Interactive (keys on in_fd): after each page the keys of stepper_keys_help() move through the
// walk: Enter the next page, `n` the next layer, `l` this step's logits, `s` the next step (this
// step's logits and sampling pages still come first: they are the step's result), `g` + digits
// + Enter (or just digits + Enter) layer N, `b` the page before, `?` the keys, `q` quits
// (StepperQuit is thrown out of the forward; the tool catches it). Pages once shown stay in
// memory: `b`, and a jump to a layer already passed, show them again without recomputing.
// Otherwise every page is printed, one after the other.
//
// The pages come from a live forward (offer) or from a stored trace (replay_step, lmscope-step):
// both build them with the same code from the same hook values.
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
  // One stored step (hook name -> value): every page of the step in the forward's order. A page
  // whose hooks are absent says which hooks to trace; the layers drawn are those with hooks.
  void replay_step(const StepInfo& info, std::map<std::string, HookData> hooks);
  // Shows the pages not shown yet (the intro, when nothing ran) and the closing line.
  void finish();

 private:
  // Shows the pages a hook completes (Embed: inputs and embeddings, AttnKRope: RoPE, AttnZ:
  // attention, ResidPost: FFN, Logits, SampleFinished: sampling).
  void pages_for(Hook h, int layer);
  void page(const std::string& title, const std::function<std::string()>& body, int layer);
  void navigate();                  // the key loop after a page
  bool jump(int target_layer, bool exact);   // false: the walk goes on (skipping); true: a page is on screen
  void show_again(size_t i);
  void note_input_ids();            // extends seq_ with this step's tokens.input_ids
  const HookData* get(const std::string& name) const;
  std::string tok(int32_t id) const;
  std::vector<std::string> key_labels(int64_t b, int64_t c0, int64_t S) const;
  std::string page_inputs() const;
  void inputs_page_once();
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
  std::vector<std::vector<int32_t>> seq_;   // per batch row: the id at each key position so far
  struct Shown {
    std::string head, body;
    int step, layer;
  };
  std::vector<Shown> shown_;   // interactive: the pages shown, in order (for `b` and `g`)
  size_t view_ = 0;            // the index in shown_ of the page on screen
  int pages_shown_ = 0;
  bool intro_done_ = false;
  bool inputs_page_done_ = false;   // this step's "tokens, positions and masks" page
  int skip_below_layer_ = -1;   // `n`, `l`, `s`, `g`: this step's pages of layers < this are skipped
  bool raw_ = false;
  void* saved_termios_ = nullptr;
};

// The intro page of one prompt: its words and each word's merges, from an EncodeTrace
// (lib/tokenizer). token_text names ids readably.
std::string render_merges_page(const EncodeTrace& trace, const std::function<std::string(int32_t)>& token_text);

// The key line shown after each page, and the help `?` prints.
const char* stepper_key_line();
const char* stepper_keys_help();

// Terminal drawings, exposed for tests.
// A [rows x cols] grid of values in [0,1] (NaN = masked) with shade characters, two per cell.
// Above it: col_labels (when given) written downwards, two display columns of text per cell
// and line (up to 3 lines; a space shows as ␣), then each column's position (tens, units).
std::string shade_grid(const std::vector<double>& values, int64_t rows, int64_t cols,
                       const std::vector<std::string>& row_labels, int64_t col_offset,
                       const std::vector<std::string>& col_labels = {});

}  // namespace lmscope
