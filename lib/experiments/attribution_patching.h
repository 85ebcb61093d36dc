// Attribution patching (docs/gradients.md, "Attribution patching"): the linear estimate of an
// activation-patching sweep. The corrupted prompt runs forward and backward once (the metric's
// gradient at every swept hook), the clean prompt forward once; each cell's estimate is
//
//   sum over the cell's values of (a_clean - a_corrupted) * d metric / d a_corrupted
//
// the first-order change of the metric if that cell were patched from the clean run into the
// corrupted one: what experiments/patching.h measures with one forward per cell.
#pragma once
#include <cstdint>
#include <vector>

#include "experiments/patching.h"

namespace lmscope {

// One site's estimates: every cell, and each cell split by position (a head or neuron cell is
// that head or neuron at every position: the sum over positions of its per-position cells).
struct AttributionCells {
  std::vector<std::vector<double>> grid;                       // [layer][column]
  std::vector<std::vector<std::vector<double>>> by_position;   // [layer][position][column]
};

// Per site (PatchSite::columns), for prompts of one length; the metric is lib/grad's
// (grad/metric.h), read on the corrupted run. Throws one line on a backend without backward ops
// (CPU and CUDA at --dtype f32 have them).
std::vector<AttributionCells> attribution_estimates(const ModelContext& m, const Weights& weights,
                                                    const std::vector<PatchSite>& sites,
                                                    const std::vector<int32_t>& clean,
                                                    const std::vector<int32_t>& corrupt, const MetricSpec& metric);

}  // namespace lmscope
