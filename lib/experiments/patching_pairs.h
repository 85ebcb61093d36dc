// Activation patching over many pairs (lmscope-patch --pairs, docs/collect.md "Patching over
// pairs"): every clean/corrupted pair of a JSONL file is swept as one pair is
// (run_patch_sweep, batched rows_per_forward cells per forward), and per cell the normalized
// metric is averaged over the pairs, with its spread (standard deviation, min, max).
//
// One JSON object per line; the fields are lmscope-patch's options for one pair:
//   {"clean": "The Eiffel Tower is in", "corrupt": "The Colosseum is in", "metric": "logit-diff:\" Paris\",\" Rome\""}
//   {"clean_ids": [1, 504, 3], "corrupt_ids": [1, 504, 9], "metric": "prob:#42"}
// "metric" may be left out when --metric gives one for every pair. Every pair must have the
// same number of tokens (a cell is a layer x position): pairs are refused, never padded.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "experiments/patching.h"

namespace lmscope {

struct PatchPair {
  int64_t line = 0;                         // 1-based line of the file, for the messages
  std::vector<int32_t> clean, corrupt;
  PatchMetric metric;
};

// Text to ids as the tool encodes --clean/--corrupt (the tokenizer, BOS, --chat).
using EncodeFn = std::function<std::vector<int32_t>(const std::string&)>;

// Reads and checks the whole file before anything runs. Blank lines are skipped. Throws one
// line "FILE:LINE: what is wrong" for: not JSON, a missing or doubled prompt field, text with
// no tokenizer, a metric that does not parse or whose token is outside the vocabulary, a pair
// whose clean and corrupted prompts differ in length, a pair longer or shorter than the first,
// and "FILE: no pairs" for an empty file.
std::vector<PatchPair> read_patch_pairs(const std::string& path, const EncodeFn& encode, const tok::Tokenizer* tokenizer,
                                        const std::string& default_metric, int64_t vocab_size);

struct PatchPairsGrid {
  std::string site, columns;                  // as PatchGrid
  std::vector<int64_t> column_index;          // as PatchGrid: the position, head or neuron of each column
  // [layer][column], over the pairs' normalized values: mean, standard deviation (population:
  // divided by the number of pairs), smallest and largest.
  std::vector<std::vector<double>> mean, sd, min, max;
};

struct PatchPairsSweep {
  std::vector<PatchSweep> pairs;              // each pair's own sweep, in file order
  std::vector<PatchPairsGrid> grids;
  int64_t forwards = 0, cells = 0;            // summed over the pairs
  double seconds = 0;
};

// Progress of a long run: after each forward, pair index (0-based), forwards done in it and
// its total.
using PairsProgressFn = std::function<void(size_t pair, int64_t forward, int64_t forwards)>;

// `base` carries the sites, rows_per_forward and clean_trace (reused by each pair); its
// clean/corrupt/metric are set from each pair. A pair whose clean and corrupted metric are
// equal has nothing to normalize and is refused with its line.
PatchPairsSweep run_patch_pairs(const ModelContext& m, const std::vector<PatchPair>& pairs, const std::string& path,
                                PatchSweepOptions base, const PairsProgressFn& progress = nullptr);

// The statistics alone, over pair sweeps of one shape (what run_patch_pairs fills in).
std::vector<PatchPairsGrid> pair_statistics(const std::vector<PatchSweep>& pairs);

}  // namespace lmscope
