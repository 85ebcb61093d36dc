// Activation patching sweeps (lmscope-patch, docs/interventions.md "Activation patching"): the
// corrupted prompt is run again and again, each time with one cell of the clean run's
// activations patched in (one site of one layer at one position, or one head's attn.z at every
// position), and a metric of the last position's logits is read. Normalized as ARENA does:
// (patched - corrupted) / (clean - corrupted), 0 = the corrupted run, 1 = the clean run.
// Cells run batched: each forward carries up to rows_per_forward patched copies of the
// corrupted prompt, one cell per row (the row= selector of an intervention).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runs/run.h"

namespace lmscope {

struct PatchMetric {
  enum class Kind { LogitDiff, Prob };
  Kind kind = Kind::LogitDiff;
  int32_t good = -1, bad = -1;    // token ids: logit(good) - logit(bad), or p(good)
  std::string text;               // as given, for the reports

  double eval(const float* logits, int64_t V) const;
};

// "logit-diff:A,B" or "prob:A"; A and B are texts that must encode to one token each (quoted
// or not: ' Paris' keeps its space inside quotes) or ids written #123. Throws one line.
PatchMetric parse_patch_metric(const std::string& text, const tok::Tokenizer* tokenizer);

// The sites a sweep knows: resid_pre, attn_out, ffn_out, resid_mid, resid_post (layers x
// positions) and attn.z (layers x heads, every position).
const std::vector<std::string>& patch_site_names();

struct PatchGrid {
  std::string site;
  std::string columns;                        // "position" or "head"
  std::vector<std::vector<double>> metric;    // [layer][column], the patched runs' metric
  std::vector<std::vector<double>> normalized;
};

struct PatchSweep {
  std::vector<int32_t> clean, corrupt;        // prompt ids
  double clean_metric = 0, corrupt_metric = 0;
  std::vector<PatchGrid> grids;
  int64_t forwards = 0, cells = 0;
  double seconds = 0;                         // the patched forwards (not the clean trace)
};

struct PatchSweepOptions {
  std::vector<int32_t> clean, corrupt;
  PatchMetric metric;
  std::vector<std::string> sites = {"resid_pre", "attn_out", "ffn_out", "attn.z"};
  int rows_per_forward = 32;
  std::string clean_trace;   // where the clean run's activations are written (a temporary)
  // Called after each patched forward with (forwards done, forwards in all): a progress line.
  std::function<void(int64_t done, int64_t total)> on_forward;
};

// Throws one line for prompts of different lengths ("clean prompt has 9 tokens, corrupted 10")
// or an unknown site.
PatchSweep run_patch_sweep(const ModelContext& m, const PatchSweepOptions& opt);

}  // namespace lmscope
