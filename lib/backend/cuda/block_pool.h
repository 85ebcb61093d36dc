// BlockPool: a caching allocator for device memory (cudaMalloc) or pinned host memory
// (cudaHostAlloc). The forward allocates every intermediate anew (decoder.cpp), so without a
// cache each op would pay a cudaMalloc, and cudaFree synchronizes the device.
//
// A block goes back to the pool when the last Tensor viewing it dies (the Tensor's owner is
// a shared_ptr whose deleter returns it). Device blocks are only ever used on the backend's
// one stream, so a block handed out again is written after every earlier use in stream
// order; pinned blocks are read by the host only after the stream was synchronized.
//
// Reuse: the smallest cached block of at least the size asked, and at most 1/4 larger.
// Cached blocks are really freed when an allocation fails (then retried) and when the pool
// dies; every path frees them.
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace lmscope::cuda {

class BlockPool : public std::enable_shared_from_this<BlockPool> {
 public:
  enum class Kind { Device, Pinned };
  explicit BlockPool(Kind kind) : kind_(kind) {}
  ~BlockPool();

  // A block of at least `bytes` (a zero-byte request gets a 256-byte block). The returned
  // owner gives the block back when its last copy dies.
  std::shared_ptr<void> get(size_t bytes);
  // Frees every cached block (after a device synchronize).
  void release_cached();
  // While a stream is being captured into a graph, the device must not be synchronized:
  // release_cached does nothing, and an allocation that fails fails at once.
  void set_capturing(bool on) { capturing_ = on; }

 private:
  void give_back(void* p, size_t bytes);
  void* raw_alloc(size_t bytes);   // nullptr when out of memory
  void raw_free(void* p);

  Kind kind_;
  std::mutex mu_;
  std::multimap<size_t, void*> free_;   // size -> block
  size_t in_use_ = 0;   // bytes handed out, for the out-of-memory message
  bool capturing_ = false;
};

}  // namespace lmscope::cuda
