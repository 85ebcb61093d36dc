// Runs a kernel launch on the CPU: every block in turn, each block's threads as fibers
// (fiber.h) on this OS thread. A thread runs until it exits or reaches a point where CUDA
// threads wait for each other; when every thread of the block waits, the waits that can
// complete do:
//   __syncthreads   when every thread of the block is there;
//   warp operations (__shfl*_sync, __ballot_sync, __any_sync, __all_sync, __syncwarp) when
//                   every lane named in the mask has made the same call with the same mask.
// What a GPU would do silently becomes a report that fails the launch, naming the kernel, the
// block and the threads: a barrier some threads of the block skip (they exited, or wait at
// another barrier), a mask naming a lane that exited or does not exist, a shuffle reading a
// lane outside its mask, a width that is not a power of two up to 32.
#pragma once
#include <vector_types.h>

#include <cstdint>
#include <functional>
#include <string>

namespace lmscope::cuda_emu {

enum class WarpOp : uint8_t { SyncWarp, ShflIdx, ShflUp, ShflDown, ShflXor, Ballot, Any, All };

struct ThreadState {
  uint3 idx;   // threadIdx
  int lane = 0, warp = 0;
};

struct BlockState {
  dim3 grid_dim, block_dim;
  uint3 idx;   // blockIdx
};

// The CUDA thread (fiber) running now, and its block. Only valid inside a kernel.
extern thread_local const ThreadState* tl_thread;
extern thread_local const BlockState* tl_block;

// Device-side waits, called by the built-ins of device.h from inside a kernel.
void sync_threads();
// Exchanges `bits` within the warp (op, mask, lane/delta/xor `param`, `width`); returns what
// this lane receives (a shuffle's value, a vote's answer).
uint64_t warp_exchange(WarpOp op, unsigned mask, uint64_t bits, int param, int width);

// Runs body() once per thread of every block of the grid. Returns "" or the first report.
std::string run_grid(const std::string& kernel, dim3 grid, dim3 block, const std::function<void()>& body);

}  // namespace lmscope::cuda_emu
