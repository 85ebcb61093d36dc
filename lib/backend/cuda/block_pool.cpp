#include "backend/cuda/block_pool.h"

#include <cuda_runtime.h>

#include <string>

#include "backend/cuda/cuda_check.h"

namespace lmscope::cuda {

namespace {
// Sizes are rounded so that nearby requests (a mask one column wider) share blocks.
size_t round_size(size_t bytes) {
  const size_t small = 512, large = size_t(2) << 20;
  if (bytes == 0) return 256;
  if (bytes < (size_t(1) << 20)) return (bytes + small - 1) / small * small;
  return (bytes + large - 1) / large * large;
}
}  // namespace

BlockPool::~BlockPool() {
  // Tensors hold the pool (through their owner), so no block is in use any more.
  for (auto& [size, p] : free_) raw_free(p);
}

void* BlockPool::raw_alloc(size_t bytes) {
  void* p = nullptr;
  cudaError_t e = kind_ == Kind::Device ? cudaMalloc(&p, bytes) : cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return nullptr;
  }
  if (e != cudaSuccess)
    throw_cuda_error(e, kind_ == Kind::Device ? "cudaMalloc(&p, bytes)" : "cudaHostAlloc(&p, bytes)", __FILE__,
                     __LINE__);
  return p;
}

void BlockPool::raw_free(void* p) {
  // Never throws: runs in deleters and destructors.
  if (kind_ == Kind::Device)
    (void)cudaFree(p);
  else
    (void)cudaFreeHost(p);
}

void BlockPool::release_cached() {
  std::lock_guard<std::mutex> lock(mu_);
  if (free_.empty() || capturing_) return;
  (void)cudaDeviceSynchronize();
  for (auto& [size, p] : free_) raw_free(p);
  free_.clear();
}

std::shared_ptr<void> BlockPool::get(size_t bytes) {
  const size_t size = round_size(bytes);
  void* p = nullptr;
  size_t got = size;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.lower_bound(size);
    if (it != free_.end() && it->first <= size + size / 4) {
      got = it->first;
      p = it->second;
      free_.erase(it);
    }
  }
  if (!p) {
    p = raw_alloc(size);
    if (!p) {   // out of memory: give the cached blocks back and try once more
      release_cached();
      p = raw_alloc(size);
    }
    if (!p)
      throw std::runtime_error(std::string("CUDA error: out of ") + (kind_ == Kind::Device ? "device" : "pinned host") +
                               " memory allocating " + std::to_string(size) + " bytes (" +
                               std::to_string(in_use_ >> 20) + " MiB in use)");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_use_ += got;
  }
  std::shared_ptr<BlockPool> self = shared_from_this();
  return std::shared_ptr<void>(p, [self, got](void* q) { self->give_back(q, got); });
}

void BlockPool::give_back(void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  in_use_ -= bytes;
  free_.emplace(bytes, p);
}

}  // namespace lmscope::cuda
