// Activation patching sweeps (lmscope-patch, docs/interventions.md "Activation patching"): the
// corrupted prompt is run again and again, each time with one cell of the clean run's
// activations patched in (one site of one layer at one position, or one head at every position,
// or one FFN neuron at every position), and a metric of the logits is read. Normalized as ARENA
// does: (patched - corrupted) / (clean - corrupted), 0 = the corrupted run, 1 = the clean run.
// Cells run batched: each forward carries up to rows_per_forward patched copies of the
// corrupted prompt, one cell per row (the row= selector of an intervention).
//
// Attribution patching (docs/gradients.md, "Attribution patching") estimates the same cells from
// one forward and backward of the corrupted prompt and one forward of the clean one: per cell,
// sum over the cell's values of (a_clean - a_corrupted) * d metric / d a_corrupted
// (experiments/attribution_patching.h).
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "grad/metric.h"
#include "model/weights.h"
#include "runs/run.h"
#include "trace/hooks.h"

namespace lmscope {

// The metric read from each run: one of lib/grad's (grad/metric.h: logit_diff:pos=P:A,B,
// logprob:pos=P:A, prob:pos=P:A, loss:FROM:TO; the one grammar of lmscope-trace --grad and
// lmscope-patch), or any function of a row's logits (the Python module's metric=fn).
struct PatchMetric {
  MetricSpec spec;   // tokens resolved
  // When set, the metric instead of spec: logits [T,V] of the prompt's T tokens. Not
  // differentiable, so not for attribution patching.
  std::function<double(const float* logits, int64_t T, int64_t V)> fn;
  std::string text;  // as given, for the reports

  // logits [T,V] of one unpadded row whose prompt is `ids` (T tokens).
  double eval(const float* logits, const int32_t* ids, int64_t T, int64_t V) const;
  // Whether the metric reads the last position's logits only (so a forward need not make the others).
  bool last_position_only() const;
};

// The grammar of grad/metric.h, and two shorter forms read at the last position:
// "logit-diff:A,B" (= logit_diff:pos=-1:A,B) and "prob:A" (= prob:pos=-1:A), whose A and B are
// texts that must encode to one token each (quoted or not: ' Paris' keeps its space inside
// quotes) or ids written #123. Every id must be below `vocab`. Throws one line.
PatchMetric parse_patch_metric(const std::string& text, const tok::Tokenizer* tokenizer, int64_t vocab);

// A swept site: an editable hook (docs/hooks.md) and the axis its cells run along.
//   resid_pre                  layer x position (the hook's every value at one position)
//   attn.z, attn.probs, attn.v layer x head (one head at every position; k/v/k_rope: KV heads)
//   attn.z:pos                 layer x position for a site with heads
//   ffn.act:neuron=0:64        layer x neuron (one FFN neuron at every position), a range of neurons
//   embed, final_norm, logits  one row x position (no layer)
struct PatchSite {
  enum class Axis { Position, Head, Neuron };
  std::string text;          // as given: "attn.z", "attn.z:pos", "ffn.act:neuron=0:64"
  Hook hook = Hook::ResidPre;
  Axis axis = Axis::Position;
  std::vector<int64_t> columns;   // the positions, heads or neurons swept

  int layers(const ModelConfig& cfg) const;   // cfg.num_layers, or 1 for a site without layers
  std::string hook_name(int layer) const;     // "layers.3.attn.z", "embed"
  std::string columns_name() const;           // "position", "head", "neuron"
};

// One site of `sites_text` (see PatchSite) for a prompt of T tokens; throws one line naming
// the site for an unknown site, an axis it does not have, or a neuron range outside 0..F-1.
PatchSite parse_patch_site(const std::string& text, const ModelConfig& cfg, int64_t T);

// The default sites, and what --sites' help lists.
const std::vector<std::string>& patch_site_names();

struct PatchGrid {
  std::string site;
  std::string columns;                        // "position", "head" or "neuron"
  std::vector<int64_t> column_index;          // the position, head or neuron of each column
  // activation patching (empty when not run): [layer][column]
  std::vector<std::vector<double>> metric;    // the patched runs' metric
  std::vector<std::vector<double>> normalized;
  // attribution patching (empty when not run): [layer][column]
  std::vector<std::vector<double>> attribution;              // estimated patched - corrupted
  std::vector<std::vector<double>> attribution_normalized;   // that / (clean - corrupted)
  // each cell split by position, [layer][position][column] (a position cell: 0 elsewhere)
  std::vector<std::vector<std::vector<double>>> attribution_by_position;
  double pearson = NAN;   // both run: the correlation of the two grids' cells (NaN: undefined)
};

struct PatchSweep {
  std::vector<int32_t> clean, corrupt;        // prompt ids
  double clean_metric = 0, corrupt_metric = 0;
  std::vector<PatchGrid> grids;
  int64_t forwards = 0, cells = 0;
  double seconds = 0;                         // the patched forwards (not the clean trace)
  double attribution_seconds = 0;             // the attribution's two runs (forward + backward)
};

struct PatchSweepOptions {
  std::vector<int32_t> clean, corrupt;
  PatchMetric metric;
  std::vector<std::string> sites = {"resid_pre", "attn_out", "ffn_out", "attn.z"};
  bool activation = true;    // run the patched forwards
  bool attribution = false;  // estimate every cell by attribution patching
  const Weights* weights = nullptr;   // the model's weights: attribution's backward reads them
  int rows_per_forward = 32;
  std::string clean_trace;   // where the clean run's activations are written ("": a temporary of its own)
  // Called after each patched forward with (forwards done, forwards in all): a progress line.
  std::function<void(int64_t done, int64_t total)> on_forward;
};

// Throws one line for prompts of different lengths ("clean prompt has 9 tokens, corrupted 10"),
// an unknown site, a metric position or range outside the prompt, or attribution asked with a
// metric that is a function.
PatchSweep run_patch_sweep(const ModelContext& m, const PatchSweepOptions& opt);

// Each row's logits after one forward of `prompts` (all of one length, no padding) with `editor`
// applied (null: none): [T,V] per row, or [1,V] (the last position) when `last_only`.
class Decoder;
class HookEditor;
std::vector<std::vector<float>> patch_row_logits(Decoder& dec, const std::vector<std::vector<int32_t>>& prompts,
                                                 HookEditor* editor, bool last_only);
// The metric of one row of patch_row_logits whose prompt is `ids`.
double patch_row_metric(const PatchMetric& metric, const std::vector<float>& logits, const std::vector<int32_t>& ids,
                        int64_t V);
// A sweep's two ends: the prompts, and the metric of the unpatched clean and corrupted runs
// (a metric position outside the prompt fails here, before any patched forward).
PatchSweep patch_sweep_ends(Decoder& dec, const std::vector<int32_t>& clean, const std::vector<int32_t>& corrupt,
                            const PatchMetric& metric, int64_t V);

// Files in a temporary folder of /tmp, removed with the folder whatever happens (a sweep refused
// mid-run included): the patch sources of a sweep.
class TemporaryTrace {
 public:
  TemporaryTrace() = default;
  TemporaryTrace(const TemporaryTrace&) = delete;
  TemporaryTrace& operator=(const TemporaryTrace&) = delete;
  ~TemporaryTrace();
  std::string path(const std::string& name);   // the folder is made at the first call

 private:
  std::string dir_;
  std::vector<std::string> files_;
};

// Pearson's correlation of two grids' cells ([layer][column] each), NaN where either is NaN
// skipped; NaN when fewer than two cells are left or either side does not vary.
double pearson(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b);

}  // namespace lmscope
