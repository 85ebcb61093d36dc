// OpTimer: where a CUDA step's device time goes, op by op. Off unless LMSCOPE_CUDA_OP_TIMES=1;
// then each op of the backend is bracketed by two events on its stream, the elapsed times are
// read back after each synchronize, and when the backend dies a table goes to stderr: per
// label (op, path and sizes: "linear/gemv bf16 N=1 O=1536 I=1536") the count, total and mean
// device time, and the bandwidth the op reached over the bytes it must move at least.
// lmscope-bench prints it; scripts/gpu-check.sh puts it in its report.
//
// Off, an op pays one branch. On, the events add a little host work per op, and each step
// starts with a 20 ms spin of the device (begin_step) so that the step is queued ahead of
// it: the device times are then the ops' own (an event is stamped when the stream reaches
// it); the wall clock, and so the tokens/s of such a run, are not.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lmscope::cuda {

class OpTimer {
 public:
  explicit OpTimer(cudaStream_t st);
  ~OpTimer();   // prints the table when enabled and anything was timed
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

  bool enabled() const { return enabled_; }

  // Stops the op's timing when it goes out of scope.
  class Scope {
   public:
    Scope() = default;
    Scope(OpTimer* t, size_t i) : t_(t), i_(i) {}
    Scope(Scope&& o) noexcept : t_(o.t_), i_(o.i_) { o.t_ = nullptr; }
    Scope& operator=(Scope&&) = delete;
    ~Scope() {
      if (t_) t_->stop(i_);
    }

   private:
    OpTimer* t_ = nullptr;
    size_t i_ = 0;
  };
  // Starts timing an op. `label` (a callable returning the label) is only called when
  // enabled; `bytes`: what the op reads and writes at least (0: no bandwidth column).
  template <class Label>
  Scope time(const Label& label, double bytes) {
    if (!enabled_) return Scope();
    return Scope(this, start(label(), bytes));
  }
  // Called as a step begins: when enabled, holds the device for a few milliseconds so that the
  // host queues the whole step meanwhile. Otherwise a starved device would be waiting for the
  // host between ops, and that wait would count as the ops' time.
  void begin_step();
  // Reads the elapsed times of finished ops (call after the stream was synchronized).
  void collect();

 private:
  size_t start(std::string label, double bytes);
  void stop(size_t i);
  cudaEvent_t event();

  struct Pending {
    std::string label;
    double bytes;
    cudaEvent_t begin, end;
  };
  struct Total {
    int64_t count = 0;
    double ms = 0, bytes = 0;
  };
  bool enabled_ = false;
  cudaStream_t st_;
  std::vector<Pending> pending_;
  std::vector<cudaEvent_t> spare_;
  std::map<std::string, Total> totals_;
};

}  // namespace lmscope::cuda
