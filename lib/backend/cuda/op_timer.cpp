#include "backend/cuda/op_timer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/cuda/cuda_check.h"
#include "kernels/launch.h"

namespace lmscope::cuda {

OpTimer::OpTimer(cudaStream_t st) : st_(st) {
  const char* env = std::getenv("LMSCOPE_CUDA_OP_TIMES");
  enabled_ = env && std::strcmp(env, "0") != 0;
}

void OpTimer::begin_step() {
  if (enabled_) spin(20000, st_);   // microseconds
}

cudaEvent_t OpTimer::event() {
  if (!spare_.empty()) {
    cudaEvent_t e = spare_.back();
    spare_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  LMSCOPE_CUDA_CHECK(cudaEventCreate(&e));
  return e;
}

size_t OpTimer::start(std::string label, double bytes) {
  Pending p{std::move(label), bytes, event(), event()};
  LMSCOPE_CUDA_CHECK(cudaEventRecord(p.begin, st_));
  pending_.push_back(std::move(p));
  return pending_.size() - 1;
}

// Runs in Scope's destructor: never throws.
void OpTimer::stop(size_t i) {
  if (i < pending_.size()) (void)cudaEventRecord(pending_[i].end, st_);
}

void OpTimer::collect() {
  for (Pending& p : pending_) {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, p.begin, p.end) == cudaSuccess) {
      Total& t = totals_[p.label];
      t.count += 1;
      t.ms += ms;
      t.bytes += p.bytes;
    } else {
      (void)cudaGetLastError();   // not recorded or not finished: dropped
    }
    spare_.push_back(p.begin);
    spare_.push_back(p.end);
  }
  pending_.clear();
}

OpTimer::~OpTimer() {
  if (enabled_) {
    (void)cudaStreamSynchronize(st_);
    collect();
    std::vector<std::pair<std::string, Total>> rows(totals_.begin(), totals_.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    double all = 0;
    int64_t ops = 0;
    for (const auto& [label, t] : rows) all += t.ms, ops += t.count;
    std::fprintf(stderr, "\nCUDA device time per op (LMSCOPE_CUDA_OP_TIMES): %lld ops, %.3f ms in all\n",
                 (long long)ops, all);
    std::fprintf(stderr, "%-52s %8s %10s %10s %8s %9s\n", "op", "count", "total ms", "mean us", "share", "GB/s");
    for (const auto& [label, t] : rows) {
      char bw[32] = "";
      if (t.bytes > 0 && t.ms > 0) std::snprintf(bw, sizeof bw, "%.0f", t.bytes / (t.ms * 1e-3) / 1e9);
      std::fprintf(stderr, "%-52s %8lld %10.3f %10.2f %7.1f%% %9s\n", label.c_str(), (long long)t.count, t.ms,
                   1e3 * t.ms / double(t.count), all > 0 ? 100.0 * t.ms / all : 0.0, bw);
    }
  }
  for (Pending& p : pending_) spare_.push_back(p.begin), spare_.push_back(p.end);
  for (cudaEvent_t e : spare_) (void)cudaEventDestroy(e);
}

}  // namespace lmscope::cuda
