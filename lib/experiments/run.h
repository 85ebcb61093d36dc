// What the experiment tools share: a model ready to run, traced runs written as trace files
// (docs/trace-format.md), hook tensors as HookData.
#pragma once
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "generate/generator.h"
#include "model/decoder.h"
#include "trace/trace.h"
#include "trace/trace_reader.h"   // HookData

namespace lmscope {

// A model ready to run, and what its traces say about it.
struct ModelContext {
  Decoder* decoder = nullptr;
  std::string model_path;     // as given on the command line
  std::string command_line;   // recorded in every trace
  std::string producer = "lmscope";   // the tools add their version
  // Ids -> text for people ("" when there is no tokenizer: the tools then show ids).
  std::function<std::string(const std::vector<int32_t>&)> detokenize;

  const ModelConfig& cfg() const { return decoder->config(); }
  std::string text(const std::vector<int32_t>& ids) const;   // detokenize, or "1,2,3"
};

// Runs generate() with `hooks` traced into the trace file `out` (root attributes as
// lmscope-trace writes them, generated_ids, atomic). `sink` (may be null) also receives every
// hook tensor.
GenerateResult run_traced(const ModelContext& m, const GenerateOptions& opt, const HookSet& hooks,
                          const std::string& out, TraceSink* sink = nullptr);

// A host float32/int32 tensor as a HookData (values widened to double) with the hook's name and
// axes. last_t > 0: only the last last_t entries of axis T (when the hook has one), sliced before
// widening.
HookData to_hook_data(Hook h, int layer, const Tensor& t, int64_t last_t = -1);

// A number for people: 3 significant digits, "0" for zero, "inf".
std::string fmt_num(double v, int digits = 3);

// A number for the JSON reports: "inf" for an infinity (either sign), null for NaN.
nlohmann::ordered_json json_num(double v);

}  // namespace lmscope
