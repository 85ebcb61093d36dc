// Writes one trace file (docs/trace-format.md) atomically: everything goes to a temporary
// `<out>.partial.<pid>.<random>` created with O_EXCL next to `<out>` (never a file this
// writer did not create), commit() sets complete=1, closes, fsyncs and renames it to `<out>`.
// A writer destroyed without commit() (an exception, an early return) removes the
// temporary, and so does SIGINT, SIGTERM or SIGHUP while a writer is alive (the handler
// unlinks the temporaries, then the signal kills the process as before). Only SIGKILL or a
// crash leave a temporary: it lacks complete=1 and is usually not even a readable HDF5
// file; delete it. So a path holds a complete trace or nothing new.
//
// Two writers on one `<out>`: a writer refuses to start while another process's live
// temporary for the same `<out>` exists (each writer holds a lock on its own), and commit()
// refuses to replace a `<out>` that appeared or changed since this writer started; either
// way one line says so and the other run's trace is kept whole.
//
// While a writer is alive, SIGXFSZ is ignored (if it was at its default), so a file-size
// limit ends in the same one-line "File too large" error as a full disk.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace lmscope {

// docs/trace-format.md. 2: kv.L.k / kv.L.v hold each step's appended cache rows
// (trace/kv_rows.h); 1 stored the whole cache at every step. Readers take both.
constexpr int64_t kTraceFormatVersion = 2;

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
  // Creates the temporary at once, so a bad output path fails before any compute.
  // Throws std::runtime_error("cannot write trace '<out_path>': <reason>"), also when
  // out_path exists and is anything but an lmscope trace (never replaces other files).
  explicit TraceWriter(std::string out_path);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  const std::string& out_path() const { return out_path_; }
  const std::string& temp_path() const { return temp_path_; }   // "" once closed

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

  // "layers.3.attn.q" -> /step_NNNN/layers/3/attn/q with attributes hook and axes.
  // Every write throws std::runtime_error("cannot write trace '<out_path>': <HDF5 reason>")
  // on an HDF5 failure (a full disk), std::logic_error on misuse.
  void write(const std::string& hook, const std::string& axes, const Shape& shape, const float* data);
  void write(const std::string& hook, const std::string& axes, const Shape& shape, const int32_t* data);
  // A kv.L.k / kv.L.v hook's rows appended this step ([B,Hkv,T,hd], trace/kv_rows.h): axes
  // B,Hkv,T,hd and the attributes rows = "appended", first_position.
  void write_kv_rows(const std::string& hook, const Shape& shape, const float* data, int64_t first_position);

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
  // closes, fsyncs and renames. On failure (also when another run wrote `<out>` meanwhile)
  // the temporary is removed and one line thrown.
  void commit();
  bool committed() const { return committed_; }

 private:
  struct State;
  void write_hook(const std::string& hook, const std::string& axes, const Shape& shape,
                  const void* data, bool is_int, int64_t kv_first_position = -1);
  void discard() noexcept;
  void release_temp() noexcept;   // forget the temporary: signal slot, lock
  void publish();                 // fsync + rename to out_path_, refusing a changed target
  [[noreturn]] void fail(const std::string& what) const;

  // What out_path_ was when this writer started: commit() refuses it changed meanwhile.
  struct TargetId {
    bool exists = false;
    uint64_t dev = 0, ino = 0, size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const TargetId& o) const {
      return exists == o.exists && dev == o.dev && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns;
    }
  };
  static TargetId target_id(const std::string& path);

  std::string out_path_;
  std::string temp_path_;       // ours to remove while created_
  std::unique_ptr<State> st_;   // HDF5 handles; null once closed
  TargetId target_at_start_;
  int steps_begun_ = 0;         // n_steps when the caller does not set it
  int gzip_level_ = 0;
  int lock_fd_ = -1;            // holds an OFD lock on the temporary: "a writer is alive"
  int signal_slot_ = -1;        // where the signal handler finds temp_path_
  bool registered_ = false;     // counted among the live writers (signal handlers installed)
  bool created_ = false;        // the temporary is ours to remove
  bool committed_ = false;
};

}  // namespace lmscope
