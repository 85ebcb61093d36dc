// Path patching (Wang et al. 2022, "Interpretability in the Wild", arXiv:2211.00593; ARENA's IOI
// exercises): how much of a sender head's effect reaches the metric through one receiver head's
// query, key or value input, and through nothing else. For each sender head (every head of the
// layers before the receiver's), in lmscope-patch's direction (clean into corrupted):
//
//   1. the corrupted prompt runs with the sender's attn.z patched from the clean run and every
//      head of the layers between the two frozen at its corrupted value (attn.z patched from the
//      corrupted run; MLPs recomputed, as ARENA does); the receiver's q/k/v input is kept;
//   2. the corrupted prompt runs again with only the receiver head's q/k/v patched from step 1,
//      and the metric is read.
//
// Normalized as activation patching: (patched - corrupted) / (clean - corrupted).
#pragma once
#include <string>
#include <vector>

#include "experiments/patching.h"

namespace lmscope {

struct PathPatchOptions {
  std::vector<int32_t> clean, corrupt;
  PatchMetric metric;
  Hook receiver = Hook::AttnQ;   // AttnQ, AttnK or AttnV (before RoPE)
  int receiver_layer = 0;
  int receiver_head = 0;         // a query head for q, a KV head for k and v
  int rows_per_forward = 32;
};

// "layers.23.attn.q[head=3]" -> receiver, layer, head of `opt`; throws one line.
void parse_path_receiver(const std::string& text, const ModelConfig& cfg, PathPatchOptions& opt);

// A sweep of one grid, site "attn.z->" + the receiver: [sender layer][sender head], layers
// 0..receiver_layer-1. Throws one line for prompts of different lengths or a receiver in layer 0.
PatchSweep run_path_patching(const ModelContext& m, const PathPatchOptions& opt);

}  // namespace lmscope
