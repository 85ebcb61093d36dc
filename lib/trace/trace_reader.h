// Reads a trace file (docs/trace-format.md). Opening refuses, with one line, anything that
// is not a complete lmscope trace, so every later read can trust the schema.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/hdf5.h"
#include "tensor/tensor.h"
#include "trace/kv_rows.h"
#include "trace/trace_writer.h"   // StepInfo

namespace lmscope {

// One hook value, widened to double whatever its stored type.
struct HookData {
  std::string hook;
  std::vector<std::string> axes;   // {"B","H","T","hd"}
  Shape shape;
  std::vector<double> values;
  bool is_int = false;

  int axis(const std::string& name) const;   // index in axes, -1 if absent
};

class TraceReader {
 public:
  // Throws std::runtime_error with one line:
  //   "cannot open trace '<path>': No such file or directory"
  //   "'<path>' is not an HDF5 file"
  //   "'<path>' is not an lmscope trace (no 'format' attribute)"
  //   "'<path>' is incomplete (no complete=1)"
  //   "'<path>' has step_0009 but only 2 step groups (steps must be numbered 0..1)"
  //   "'<path>' step_0000 logits: axis T is 0 (every axis is at least 1)"
  // Every dataset's shape is checked against the others' and the root attributes' on open
  // (trace/trace_layout.h), so a reader may index a hook by its axes of docs/hooks.md.
  explicit TraceReader(const std::string& path);

  const std::string& path() const { return path_; }

  // Root attributes. Strings that hold JSON (config_json, prompts, missing_hooks) come
  // back as text: parse them where they are used.
  bool has_root_attr(const std::string& key) const;
  std::vector<std::string> root_attr_names() const;
  std::string root_attr_string(const std::string& key) const;
  int64_t root_attr_int(const std::string& key) const;
  double root_attr_double(const std::string& key) const;
  std::vector<int32_t> root_attr_ints(const std::string& key) const;
  std::string root_attrs_json() const;   // every root attribute as one JSON object text
  // The attributes of a group inside a step ("sample": the sampler settings) as one JSON
  // object text; "{}" when the step has no such group.
  std::string step_group_attrs_json(int step, const std::string& group) const;

  // Steps are the /step_NNNN groups, numbered 0..n_steps()-1.
  int n_steps() const { return int(steps_.size()); }
  bool has_step(int step) const;
  StepInfo step_info(int step) const;

  // Dotted hook names of a step, in forward order (hook_sort_key): found on open by walking
  // the step group and reading each dataset's `hook` attribute (which refuses a link cycle,
  // groups nested more than 32 levels deep, an external link).
  std::vector<std::string> hooks(int step) const;
  bool has_hook(int step, const std::string& hook) const;
  // kv.L.k / kv.L.v come back as the whole cache [B,Hkv,S,hd] however the file stores them:
  // from appended rows they are rebuilt from steps 0..step (trace/kv_rows.h); the reader keeps
  // each kv hook's latest cache, so reading steps in order reads each step's rows once.
  // Hooks that hold ids (trace_layout.h, hook_holds_ids) are checked to be int32 integers.
  HookData read(int step, const std::string& hook) const;

  bool has_generated_ids() const;
  HookData generated_ids() const;   // [B,N] int32; hook = "generated_ids", axes {"B","N"}

  // Datasets outside the steps by slash path ("tokenizer/row_0/pieces"): what a reader of
  // the tokenizer groups needs. has_dataset is false for a missing path or a group.
  bool has_dataset(const std::string& path) const;
  h5::DatasetData read_dataset(const std::string& path) const;
  // An integer dataset (ids, offsets): every value checked to be an int32 (check_ids).
  std::vector<int32_t> read_ints(const std::string& path) const;
  std::vector<std::string> read_strings(const std::string& path) const;

 private:
  const h5::Group& step_group(int step) const;
  HookData read_kv_cache(int step, const std::string& hook) const;
  std::string path_;
  h5::File file_;
  std::vector<h5::Group> steps_;   // index = step number
  std::vector<std::vector<std::string>> hooks_;   // per step, in forward order (found on open)
  struct KvState {
    int step = -1;                   // the last step whose rows are in `cache`
    int64_t S = 0;                   // that step's cache length
    KvAssembly cache;
  };
  mutable std::map<std::string, KvState> kv_;   // per kv hook, for read()
};

std::string step_group_name(int step);   // 3 -> "step_0003"

}  // namespace lmscope
