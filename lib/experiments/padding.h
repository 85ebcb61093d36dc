// The padding experiment (lmscope-padding, docs/experiments.md): each prompt alone (the
// reference) against the same prompts batched with padding in the four ways of
// experiments/padding_modes.h.
//
// Every run is traced to HDF5; each batch row is compared with its solo run with the pads
// stripped through the masks (compare/align.h), hook by hook, under the per-hook tolerances.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "compare/tolerances.h"
#include "experiments/padding_modes.h"
#include "runs/run.h"

namespace lmscope {

// Hooks that carry absolute positions (tokens.position_ids, rope.*, q/k after RoPE, the cached
// keys): under left_colpos they differ by design while attention, which sees only position
// differences, does not.
bool carries_absolute_position(const std::string& hook);

struct PaddingOptions {
  std::vector<std::vector<int32_t>> prompts;   // token ids, unpadded
  std::vector<std::string> prompt_texts;       // for display (empty: ids are shown)
  int max_new_tokens = 16;
  SamplingConfig sampling;                     // greedy by default
  int32_t pad_id = 0;
  std::vector<int32_t> eos_ids;
  std::vector<PaddingMode> modes = all_padding_modes();
  std::string hooks = "*";                     // traced hooks (globs) and layers
  std::string layers;
  std::string out_dir;                         // trace files: solo_<row>.h5, <mode>.h5
  ToleranceTable tolerances = ToleranceTable::defaults();
};

// Where a batch row first leaves its solo run.
struct Divergence {
  int step = 0;
  std::string hook;
  int layer = -1;          // -1 for hooks outside the layers
  int64_t position = -1;   // token position in the row's own sequence (the solo's columns)
  std::string index;       // the element, in the aligned (pads stripped) tensor: "[0,1,0,5]"
  double max_abs = 0, bound = 0;
  std::string reason;      // HookResult::reason()
};

struct HookError {         // the largest error of one hook name over the compared steps
  std::string hook;
  int step = 0;            // the step of that error
  double max_abs = 0, rel = 0, bound = 0;
  bool pass = true;        // every step within tolerance
};

struct ModeRow {
  PaddingMode mode = PaddingMode::Left;
  std::string trace;                   // the batch trace file
  std::vector<int32_t> tokens;         // this row's new tokens in the batch
  bool tokens_equal = false;           // equal to the solo run's (over the solo's length)
  int first_token_difference = -1;     // index of the first differing new token, -1 if none
  bool matches_solo = false;           // tokens equal and every hook that does not carry an
                                       // absolute position within tolerance
  std::optional<Divergence> first_divergence;            // first hook beyond tolerance
  std::optional<Divergence> first_divergence_ignoring_positions;
  std::vector<HookError> per_hook;     // forward order
  // The picture's columns [embed, resid_post of layers 0..L-1, logits]: the worst relative
  // error at the prefill (step 0) and over the decode steps (NaN: not compared), and whether
  // some step is beyond tolerance. layer_qk_*: the same for q_rope/k_rope (embed and logits NaN).
  std::vector<double> layer_rel_prefill, layer_rel_decode;
  std::vector<char> layer_fail;
  std::vector<double> layer_qk_rel_prefill, layer_qk_rel_decode;
  std::vector<char> layer_qk_fail;
  double max_q_rope_err = 0, max_scores_err = 0;   // for the RoPE sentence
  bool q_rope_compared = false, scores_compared = false;   // traced (--hooks): else the sentence cannot say
  int64_t read_column = -1;            // the column the first new token was read from
  std::string sentence;                // one plain sentence: why
};

struct PaddingRow {
  std::vector<int32_t> prompt;
  std::string prompt_text;
  int64_t pads = 0;                    // batch width - prompt length
  std::vector<int32_t> solo_tokens;
  std::string solo_trace;
  std::vector<ModeRow> modes;
};

struct PaddingReport {
  int64_t width = 0;                   // padded prompt width P
  int num_layers = 0;
  int max_new_tokens = 0;
  std::vector<PaddingMode> modes;
  std::vector<PaddingRow> rows;
  std::string svg;                     // the divergence picture (divergence.svg in out_dir)
};

// Writes the traces, divergence.svg and padding.svg (experiments/padding_svg.h) into out_dir.
PaddingReport run_padding_experiment(const ModelContext& m, const PaddingOptions& opt);

// "matches solo", or "departs: step 0, layers.0.attn_out, position 3" (where it first departs).
std::string departure_note(const ModeRow& mr);

std::string padding_report_text(const PaddingReport& r, const ModelContext& m);
// {"rows":[{"prompt", "prompt_ids", "pads", "solo": {"tokens","text","trace"}, "modes": {"left":
//   {"matches_solo", "tokens_equal", "first_divergence", "first_divergence_ignoring_positions",
//    "text", "tokens", "sentence", "max_error_per_hook": {...}, "trace"}, ...}}], ...}
std::string padding_report_json(const PaddingReport& r, const ModelContext& m);

}  // namespace lmscope
