// What the experiment tools share: a model ready to run, traced runs written as trace files
// (docs/trace-format.md), hook tensors as HookData.
#pragma once
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "generate/generator.h"
#include "io/format_number.h"   // fmt_num, the number for people
#include "model/decoder.h"
#include "tokenizer/encode_trace.h"
#include "tokenizer/tokenizer.h"
#include "trace/trace.h"
#include "trace/trace_reader.h"   // HookData

namespace lmscope {

// A model ready to run, and what its traces say about it.
struct ModelContext {
  Decoder* decoder = nullptr;
  std::string model_path;     // as given on the command line
  std::string command_line;   // recorded in every trace
  std::string producer = "lmscope";   // the tools add their version
  const tok::Tokenizer* tokenizer = nullptr;   // null: ids are shown as ids, no /tokenizer group
  std::vector<EncodeTrace> encodings;          // how the prompts given as text became ids

  const ModelConfig& cfg() const { return decoder->config(); }
  std::string text(const std::vector<int32_t>& ids) const;   // decoded, or "1,2,3"
  // The encoding that made exactly these ids (null for prompts given as ids).
  const EncodeTrace* encoding_of(const std::vector<int32_t>& ids) const;
};

// A traced run: generate()'s result, and what the trace saw.
struct TracedRun : GenerateResult {
  std::vector<std::string> missing_hooks;   // requested, never fired
  int64_t tensors_traced = 0;
};

// The one way a tool runs generate() traced: `hooks` offered to `sink` (may be null) and, when
// `out` is not empty, written to the trace file `out` (atomic, gzip level `compress`) with the
// run's record (trace/run_record.h). The file is created before the model runs, so an
// unwritable path fails at once.
// `more`, when set, writes more datasets into the trace's last step before its record (lmscope-trace
// --grad: the grad.<hook> datasets).
TracedRun run_traced(const ModelContext& m, const GenerateOptions& opt, const HookSet& hooks, const std::string& out,
                     TraceSink* sink = nullptr, int compress = 0,
                     const std::function<void(TraceWriter&)>& more = nullptr);

// A host float32/int32 tensor as a HookData (values widened to double) with the hook's name and
// axes. last_t > 0: only the last last_t entries of axis T (when the hook has one), sliced before
// widening.
HookData to_hook_data(Hook h, int layer, const Tensor& t, int64_t last_t = -1);

// A number for the JSON reports: "inf" / "-inf" for an infinity (a string: JSON has none), null
// for NaN (fmt_num, io/format_number.h, writes the same infinities for people).
nlohmann::ordered_json json_num(double v);

}  // namespace lmscope
