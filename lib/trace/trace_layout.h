// What every reader of a trace may assume about its shapes, checked once when TraceReader
// opens the file (from the datasets' headers, before any value is read). The report, the
// stepper, the lens view and the comparer index hooks by the axes of docs/hooks.md
// (logits[b, T-1, v], probs[b, h, T-1, s]); a crafted file whose logits are [1,0,V], whose
// generated_ids have another batch size, or whose mask is [B,T] instead of [B,T,S] would make
// them read outside a buffer. So a known hook must have its table's rank, and each axis must
// agree with the rest of the trace:
//   B     the rows: the `prompts` attribute's count (else the first hook's), for every hook
//         and for generated_ids;
//   T, S  the step's query tokens and key positions: its `T` / `S` attributes (else the first
//         hook's), for every hook of that step; at most config_json's max_position_embeddings
//         (else kMaxTracePositions);
//   V     config_json's vocab_size when it has one, else the first hook's;
//   D, H, Hkv, hd, F, K, N: one size for the whole trace ("blocks" one per hook kind).
// Every axis is at least 1. Values are not read here: ids are checked where they are read
// (TraceReader::read, check_ids).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "trace/trace_writer.h"   // StepInfo

namespace lmscope {

// A dataset's header, as the reader's walk of a step finds it.
struct DatasetHeader {
  std::string hook;   // dotted name ("layers.3.attn.probs")
  Shape shape;
  // The dataset's `rows` attribute: "appended" (kv.L.k / kv.L.v stored as the step's new rows:
  // axis 2 is T, not S), "last" (logits kept for the last position only: T is 1), or "".
  std::string rows;
};

struct StepLayout {
  StepInfo info;
  bool has_T = false, has_S = false;   // whether the step group carries those attributes
  std::vector<DatasetHeader> datasets;
};

// The trace's own numbers, from its root attributes; -1 where the trace does not say.
struct RootDims {
  int64_t B = -1;   // rows of `prompts`
  int64_t V = -1;   // config_json's vocab_size
  int64_t positions = -1;   // config_json's max_position_embeddings: T and S are at most this
};

// Positions a step may claim (T, S): far more than any model here reads, far less than what
// would make a reader allocate gigabytes for a table nobody stored.
constexpr int64_t kMaxTracePositions = int64_t(1) << 20;

// Throws std::runtime_error with one line naming the file, the step and the hook:
//   "'x.h5' step_0000 logits: axis T is 0 (every axis is at least 1)"
//   "'x.h5' generated_ids: axis B is 2 but the trace has 1 row (prompts)"
void check_trace_layout(const std::string& path, const RootDims& root, const std::vector<StepLayout>& steps,
                        const Shape* generated_ids);

// Values that a reader turns into token ids (input ids, candidates, chosen, lens top-k,
// generated_ids) must be integers within int32: a NaN or 1e30 there would be undefined
// behaviour at the conversion. Throws one line "'<where>': value <v> at index <i> is not a token id".
void check_ids(const std::vector<double>& values, const std::string& where);
// Whether `hook` holds ids (or 0/1 masks and positions) that readers convert to integers.
bool hook_holds_ids(const std::string& hook);

}  // namespace lmscope
