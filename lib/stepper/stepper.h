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
// On a terminal of known size (StepperOptions::screen_rows/cols, from the tool's TIOCGWINSZ)
// the walk is a screen: the screen is cleared before each page, a page is cut to fit (long
// lines wrapped, tall pages scrolled with j/k), the attention page draws one head (h / H: the
// next / previous one) and heatmaps show the key window that fits the width.
// More keys, on a screen or not: `p` the previous layer, `t N` step N, `r N` query position N,
// `<` / `>` move the key window (stepper_keys_help()).
//
// The pages come from a live forward (offer) or from a stored trace (replay_step, lmscope-step):
// both build them with the same code from the same hook values.
#pragma once
#include <cstdio>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
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
  int max_cols = 40;                // heatmaps, not on a screen: at most max_cols key columns (key_window)
  int max_rows = 24;                // ... and the last max_rows query positions
  int screen_rows = 0, screen_cols = 0;   // interactive on a terminal this size (0: no screen; whole pages)
  SamplingConfig sampling;          // shown on the sampling pages
  std::function<std::string(int32_t)> token_text;   // id -> readable token (may be empty)
  std::vector<std::string> intro_pages;              // shown first (the tokenizer's merges)
};

// What a page shows of its tensors, chosen by keys: kept across pages (head 3 stays head 3 on
// the next layer) and reset by nothing but keys.
struct PageView {
  int rows = 0, cols = 0;    // the screen (0: no screen: every head, the whole text)
  int head = 0;              // on a screen: the attention head drawn
  int64_t query = -1;        // the query position whose row is drawn and whose keys are named (-1: the step's last)
  int64_t key_back = 0;      // the key window moved back from the last key by this many keys (< >)
  int top = 0;               // on a screen: the first line of the page shown (j/k scroll)
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
  using Render = std::function<std::string(const PageView&)>;
  void page(const std::string& title, const std::function<std::string()>& body, int layer);
  void page(const std::string& title, Render render, int layer);
  void navigate();                  // the key loop after a page
  bool jump(int target_layer, bool exact);   // false: the walk goes on (skipping); true: a page is on screen
  bool jump_step(int target_step);  // t N: likewise
  void show_again(size_t i);
  void redraw();                    // the page on screen again, drawn with view_now_
  void draw(const std::string& head, const std::string& body);   // a screen: cleared, the page fitted
  void say(const std::string& line);   // a note after a key: on a screen, in the footer
  bool screen() const { return opt_.screen_rows > 0 && opt_.screen_cols > 0; }
  Render attention_render(int layer) const;   // the layer's attention of row opt_.row, kept for re-drawing
  Render mask_render(const std::string& table) const;   // the inputs page: the table above the mask grid
  void note_input_ids();            // extends seq_ with this step's tokens.input_ids
  const HookData* get(const std::string& name) const;
  std::string tok(int32_t id) const;
  std::vector<std::string> key_labels(int64_t b, int64_t c0, int64_t S) const;
  std::string page_inputs() const;
  std::string earlier_columns(int64_t first_column, int64_t T) const;   // "(columns 0..12 are not shown ...)"
  void inputs_page_once();
  std::string page_embed() const;
  std::string page_rope(int layer) const;

  std::string page_ffn(int layer) const;
  std::string page_logits() const;
  std::string page_sampling() const;

  ModelConfig cfg_;
  StepperOptions opt_;
  StepInfo info_;
  std::map<std::string, HookData> cur_;   // this step's tensors
  std::vector<std::vector<int32_t>> seq_;   // per batch row: the id at each key position so far
  struct Shown {
    std::string head;
    Render render;
    int step, layer;
  };
  std::vector<Shown> shown_;   // interactive: the pages shown, in order (for `b` and `g`)
  size_t view_ = 0;            // the index in shown_ of the page on screen
  PageView view_now_;          // what the pages show (keys change it)
  std::string notice_;         // on a screen: the note of the last key, in the footer
  int skip_below_step_ = -1;   // `t N`: the pages of steps before N are skipped
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

// A token's text as a label: control characters escaped (a newline token reads \n, a tab \t,
// others \xHH) so that a page keeps its lines.
std::string printable_label(const std::string& text);

// The key columns a heatmap of S keys shows in `cells` columns. All of them when they fit;
// otherwise the first kSinkKeys keys (most heads park attention on the first tokens, the
// "attention sink" of Xiao et al. 2023, arXiv:2309.17453, so the page's "attends most to 0"
// stays visible), a gap column (-1), and a window of consecutive keys from `start` (-1: the
// window ends at the last key). `note` says which keys are shown, e.g. "keys 0-3 and 372-412 of 0-412".
constexpr int64_t kSinkKeys = 4;
struct KeyWindow {
  std::vector<int64_t> cols;   // key positions; -1 = the gap
  int64_t start = 0;           // the window's first key (0 when every key fits)
  std::string note;
};
KeyWindow key_window(int64_t S, int64_t cells, int64_t start);

// The terminal's rows and columns (TIOCGWINSZ on fd); {0, 0} when fd is no terminal.
std::pair<int, int> terminal_size(int fd);
// `text` wrapped at `cols` display columns (utf8proc's widths), as lines.
std::vector<std::string> wrap_lines(const std::string& text, int cols);

// Terminal drawings, exposed for tests.
// A [rows x cols] grid of values in [0,1] (NaN = masked) with shade characters, two per cell.
// Above it: col_labels (when given) written downwards, two display columns of text per cell
// and line (up to 3 lines; a space shows as ␣), then each column's position (tens, units).
std::string shade_grid(const std::vector<double>& values, int64_t rows, int64_t cols,
                       const std::vector<std::string>& row_labels, int64_t col_offset,
                       const std::vector<std::string>& col_labels = {});
// The same over chosen columns: col_positions[c] is column c's key position (-1: a gap column,
// drawn ┊); values holds rows x col_positions.size() (a gap's value unused).
std::string shade_grid(const std::vector<double>& values, int64_t rows, const std::vector<int64_t>& col_positions,
                       const std::vector<std::string>& row_labels, const std::vector<std::string>& col_labels);

}  // namespace lmscope
