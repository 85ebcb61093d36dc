// What a trace file says about its run besides the step groups: the root attributes,
// /generated_ids and /tokenizer/row_B (docs/trace-format.md, "Root"). Every tool that writes a
// trace fills a RunRecord and calls write_run_record once, after the last step and before
// TraceWriter::commit().
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trace/trace_writer.h"

namespace lmscope {

struct RunRecord {
  std::string producer;        // "lmscope 0.1.0"
  std::string model_path;      // as given on the command line
  std::string config_json;     // the model's config (config.json, or built from GGUF metadata)
  std::string backend, compute_dtype;
  std::string activations;     // "f32", or "q8" (--cpu-activations q8)
  std::string command_line;
  std::vector<std::vector<int32_t>> prompts;   // token ids, unpadded
  std::string padding_side;                    // "left" / "right"
  bool use_cache = true;
  int max_new_tokens = 0;
  int32_t pad_token_id = 0;
  std::vector<int32_t> gqa_map;                // KV head serving each query head
  std::vector<std::vector<int32_t>> generated_ids;   // [B][steps]
  std::vector<int32_t> eos_token_ids;          // the ids that finish a row
  std::vector<std::string> stop_strings;       // HF stop_strings (may be empty)
  std::vector<std::string> stop_reasons;       // [B] "eos", "stop_string" or "max_new_tokens"
  std::vector<std::string> missing_hooks;      // requested, never fired
  std::string interventions_json;              // what was edited (JSON array); empty: a clean run
  // Writes /tokenizer/row_<row> for a prompt whose text is known (null: no tokenizer group).
  std::function<void(TraceWriter& w, int row)> write_tokenizer_row;
};

void write_run_record(TraceWriter& w, const RunRecord& r);

}  // namespace lmscope
