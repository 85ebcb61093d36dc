// ArraySink: every hook tensor a run offers, kept in memory as plain float32 / int32 buffers
// (the Python module hands them to numpy without copying again: core_module.cpp). It holds no
// Python object, so the forward runs without the GIL.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trace/hooks.h"
#include "trace/trace.h"

namespace lmscope::py {

struct HeldTensor {
  std::vector<int64_t> shape;
  bool ids = false;           // int32 (tokens.*, sample.chosen, ...), else float32
  std::vector<float> f32;
  std::vector<int32_t> i32;
};

class ArraySink : public TraceSink {
 public:
  // keep_steps: only steps below it are kept (1: the prefill only, as run_with_cache wants).
  explicit ArraySink(int keep_steps) : keep_steps_(keep_steps) {}

  void begin_step(const StepInfo& info) override { step_ = info.step; }
  void offer(Hook h, int layer, const Tensor& t) override;

  // step -> hook name -> tensor
  std::map<int, std::map<std::string, HeldTensor>>& steps() { return steps_; }

 private:
  int keep_steps_;
  int step_ = 0;
  std::map<int, std::map<std::string, HeldTensor>> steps_;
};

}  // namespace lmscope::py
