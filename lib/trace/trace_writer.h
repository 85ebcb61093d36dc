// Writes one trace file (docs/trace-format.md) atomically: everything goes to
// `<out>.partial`, commit() sets complete=1 and renames it to `<out>`. A writer destroyed
// without commit() (an exception, an early return) removes the partial file, so a path
// either holds a complete trace or nothing new.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace lmscope {

struct StepInfo {
  int step = 0;
  std::string phase;        // "prefill" or "decode"
  bool use_cache = false;
  int64_t past_length = 0;
  int64_t T = 0;
  int64_t S = 0;
};

class TraceWriter {
 public:
  // Creates out_path + ".partial" at once, so a bad output path fails before any compute.
  // Throws std::runtime_error("cannot write trace '<out_path>': <reason>"), also when
  // out_path exists and is anything but an lmscope trace (never replaces other files).
  explicit TraceWriter(std::string out_path);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  const std::string& out_path() const { return out_path_; }
  std::string partial_path() const { return out_path_ + ".partial"; }

  void set_root_attr(const std::string& key, const std::string& v);
  void set_root_attr(const std::string& key, const char* v) { set_root_attr(key, std::string(v)); }
  void set_root_attr(const std::string& key, int64_t v);
  void set_root_attr(const std::string& key, int v) { set_root_attr(key, int64_t(v)); }
  void set_root_attr(const std::string& key, double v);
  void set_root_attr(const std::string& key, const std::vector<int32_t>& v);

  // gzip level (1-9) for hook datasets over 64 KiB; 0 (the default) writes them raw.
  void set_compression(int gzip_level) { gzip_level_ = gzip_level; }

  // Creates /step_NNNN with the step attributes; hooks written after it go there.
  void begin_step(const StepInfo& info);
  int steps_begun() const { return steps_begun_; }

  // "layers.3.attn.q" -> /step_NNNN/layers/3/attn/q with attributes hook and axes.
  void write(const std::string& hook, const std::string& axes, const Shape& shape, const float* data);
  void write(const std::string& hook, const std::string& axes, const Shape& shape, const int32_t* data);

  // Attributes on a group of the current step ("sample" -> /step_NNNN/sample, created on
  // demand): the sampling settings.
  void set_step_group_attr(const std::string& group, const std::string& key, const std::string& v);
  void set_step_group_attr(const std::string& group, const std::string& key, const char* v) {
    set_step_group_attr(group, key, std::string(v));
  }
  void set_step_group_attr(const std::string& group, const std::string& key, int64_t v);
  void set_step_group_attr(const std::string& group, const std::string& key, int v) {
    set_step_group_attr(group, key, int64_t(v));
  }
  void set_step_group_attr(const std::string& group, const std::string& key, double v);

  // A dataset outside the steps: "generated_ids", or a slash path ("tokenizer/row_0/ids",
  // groups created on demand).
  void write_root_dataset(const std::string& name, const Shape& shape, const int32_t* data);
  void write_root_dataset(const std::string& name, const Shape& shape, const float* data);
  // The same for UTF-8 strings (the tokenizer trace's text and words): shape {} is one
  // string, {n} is n strings.
  void write_root_strings(const std::string& name, const Shape& shape, const std::vector<std::string>& values);

  // Sets format / format_version / n_steps when the caller has not, then complete=1;
  // closes and renames. On failure the partial file is removed and the error rethrown.
  void commit();
  bool committed() const { return committed_; }

 private:
  struct State;
  void write_hook(const std::string& hook, const std::string& axes, const Shape& shape,
                  const void* data, bool is_int);
  void discard() noexcept;
  [[noreturn]] void fail(const std::string& what) const;

  std::string out_path_;
  std::unique_ptr<State> st_;   // HDF5 handles; null once closed
  int steps_begun_ = 0;
  int gzip_level_ = 0;
  bool created_ = false;   // the .partial file is ours to remove
  bool committed_ = false;
};

}  // namespace lmscope
