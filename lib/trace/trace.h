// Trace: what the forward pass offers its tensors to. It asks its HookSet first; a hook
// nobody asked for costs one table lookup and no copy. An offered tensor (a host tensor,
// stored as float32 unless it holds ids) is written by the TraceWriter into the current
// step's group during offer(). When it is offered depends on the backend: on the CPU right
// after the op that made it; on a device backend the forward's HookQueue
// (trace/hook_queue.h) queues an asynchronous copy into pinned host memory and offers the
// copies once the device has caught up (at the end of the forward, or when 256 MiB are
// pending). Either way the tensor offered is an op's own output or a copy of it, never a
// buffer that is reused later.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "trace/hook_editor.h"
#include "trace/hook_set.h"
#include "trace/trace_writer.h"

namespace lmscope {

// Receives every wanted hook tensor in memory (host, as offered), writer or not: for tools
// that compare or show tensors without a file (lmscope-cache, lmscope-trace --step). A
// tensor handed to offer() is valid only during the call: copy what you keep.
class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void begin_step(const StepInfo& info) { (void)info; }
  virtual void offer(Hook h, int layer, const Tensor& t) = 0;
};

class Trace {
 public:
  // writer may be null: hooks are then checked and counted but not written (tests, bench).
  Trace(HookSet hooks, TraceWriter* writer);

  bool wants(Hook h, int layer = -1) const { return hooks_.enabled(h, layer); }
  // Host tensors only; a device backend copies to the host before offering.
  void offer(Hook h, int layer, const Tensor& t);
  void offer(Hook h, const Tensor& t) { offer(h, -1, t); }

  void begin_step(const StepInfo& info);
  int step() const { return step_; }
  TraceWriter* writer() { return writer_; }
  // The editor that may change tensors at their hook points (not owned; null: none).
  void set_editor(HookEditor* editor) { editor_ = editor; }
  HookEditor* editor() const { return editor_; }
  bool edits(Hook h, int layer) const { return editor_ && editor_->edits(h, layer); }
  // Also hand every wanted tensor to `sink` (not owned; null: none).
  void set_sink(TraceSink* sink) { sink_ = sink; }
  const HookSet& hooks() const { return hooks_; }
  int lens_top_k() const { return hooks_.lens_top_k(); }

  // Hooks the model does not compute at all (layers.L.attn.q_norm of a model with no q/k
  // norm): a request for them ("*") lacks nothing, so never_fired() leaves them out. The
  // Decoder says so from its config at each forward.
  void set_not_in_model(const std::vector<Hook>& hooks);

  // The backend's activations() ("f32", or "q8" under --cpu-activations q8): the quant.*.q8 /
  // .q8_scale hooks are computed only where it is not "f32". The Decoder says so at each forward.
  void set_backend_activations(const std::string& activations) { quantizing_backend_ = activations != "f32"; }

  // Requested hooks that never fired in any step ("kv.0.k" under --no-cache; under q8 a
  // quant.*.q8 hook whose matmul took float32 activations: a float32 or bf16 weight, ...).
  std::vector<std::string> never_fired() const;
  int64_t tensors_written() const { return written_; }

 private:
  HookSet hooks_;
  TraceWriter* writer_;
  TraceSink* sink_ = nullptr;
  HookEditor* editor_ = nullptr;
  int step_ = -1;
  int64_t step_T_ = 0;   // query tokens this step: the rows a kv hook appended
  std::vector<std::vector<char>> fired_;
  std::vector<char> not_in_model_;   // by Hook id
  bool quantizing_backend_ = false;   // set_backend_activations
  int64_t written_ = 0;
  bool counts_if_never_fired(Hook h) const;   // never_fired()'s rule
};

}  // namespace lmscope
