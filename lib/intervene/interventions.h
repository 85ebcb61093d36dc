// Interventions: parsed specs (intervene/spec.h) made ready for one model and one run, and
// applied inside Decoder::forward at the hook point, before the next op reads the tensor
// (docs/interventions.md). The forward asks edits(h, layer) (one table lookup); only a hook
// that some spec edits is touched. apply() is the one place that edits: it brings the tensor
// to the host (Backend::to_host; a no-op on the CPU, where the tensor is edited in place),
// changes the selected values and hands the result back with Backend::upload, so a device
// backend runs interventions with no code of its own.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "intervene/spec.h"
#include "model/config.h"
#include "trace/trace_reader.h"
#include "trace/hook_editor.h"

namespace lmscope {

// A run's hook tensors in memory, used as a source trace would be: step 0's tensors by hook name,
// each row's prompt length and the padding side, and the run's model (checked against this one).
struct MemorySource {
  std::string config_json;
  std::vector<int64_t> prompt_len;
  std::string padding_side = "left";
  std::map<std::string, HookData> hooks;
};

class Interventions : public HookEditor {
 public:
  // Checks every spec against the model (layers, heads, neurons), reads source traces (their
  // model must be this one: the same config) and vector files (finite, of a width the site
  // takes). Throws std::invalid_argument with one line naming the spec (begin_run too).
  Interventions(std::vector<InterventionSpec> specs, const ModelConfig& cfg);
  ~Interventions() override;

  bool empty() const { return specs_.empty(); }
  bool edits(Hook h, int layer) const override {
    const auto& row = table_[size_t(h)];
    return !row.empty() && row[size_t(layer < 0 ? 0 : layer)];
  }

  // Before a run: each row's prompt length (positions 0..len-1 are the prompt). Checks the
  // selectors against the run (rows, positions) and a patch source's prompt against each row.
  void begin_run(const std::vector<int64_t>& prompt_lengths, int max_new_tokens) override;

  void apply(Backend& be, Hook h, int layer, Tensor& t, const EditContext& ctx) override;

  // What the trace records (root attribute `interventions`): per spec its text, op, site and
  // the sha256 of every file it read.
  nlohmann::ordered_json record() const;
  std::string record_json() const override;

 private:
  struct Resolved;
  std::vector<std::unique_ptr<Resolved>> specs_;
  std::vector<std::vector<char>> table_;
  ModelConfig cfg_;
  std::vector<int64_t> prompt_lengths_;
};

}  // namespace lmscope
