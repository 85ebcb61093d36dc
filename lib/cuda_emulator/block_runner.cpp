#include "cuda_emulator/block_runner.h"

#include <cstdio>
#include <exception>
#include <memory>
#include <vector>

#include "cuda_emulator/fiber.h"

#if defined(LMSCOPE_EMULATOR_ASAN)
#include <sanitizer/common_interface_defs.h>
#endif

namespace lmscope::cuda_emu {

thread_local const ThreadState* tl_thread = nullptr;
thread_local const BlockState* tl_block = nullptr;

namespace {

enum class Wait : uint8_t { Running, Barrier, Warp, Exited };

struct Thread {
  ThreadState pub;
  FiberContext ctx;
  Wait wait = Wait::Running;
  // at a warp operation
  WarpOp op = WarpOp::SyncWarp;
  unsigned mask = 0;
  uint64_t bits = 0, result = 0;
  int param = 0, width = 32;
};

struct Block {
  BlockState pub;
  std::vector<Thread> threads;
  FiberContext scheduler;
  const std::function<void()>* body = nullptr;
  Thread* running = nullptr;
  std::string error;          // the first report of this block
  std::string thrown;         // what a thread's body threw, if anything
  void* scheduler_stack_bottom = nullptr;   // AddressSanitizer's view of the switches
  size_t scheduler_stack_size = 0;
};

thread_local Block* tl_run = nullptr;
thread_local StackPool tl_stacks;

// AddressSanitizer must be told about every stack switch, or it reports the fibers' frames.
void switch_to_fiber(Block& b, Thread& t) {
#if defined(LMSCOPE_EMULATOR_ASAN)
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, tl_stacks.stack(size_t(&t - b.threads.data())), StackPool::stack_bytes());
  fiber_switch(b.scheduler, t.ctx);
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
  fiber_switch(b.scheduler, t.ctx);
#endif
}

void switch_to_scheduler(Block& b, Thread& t, bool exiting) {
#if defined(LMSCOPE_EMULATOR_ASAN)
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(exiting ? nullptr : &fake, b.scheduler_stack_bottom, b.scheduler_stack_size);
  fiber_switch(t.ctx, b.scheduler);
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
  (void)exiting;
  fiber_switch(t.ctx, b.scheduler);
#endif
}

void fiber_main(void* arg) {
  Thread& t = *static_cast<Thread*>(arg);
  Block& b = *tl_run;
#if defined(LMSCOPE_EMULATOR_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, const_cast<const void**>(&b.scheduler_stack_bottom), &b.scheduler_stack_size);
#endif
  try {
    (*b.body)();
  } catch (const std::exception& e) {
    if (b.thrown.empty()) b.thrown = e.what();
  } catch (...) {
    if (b.thrown.empty()) b.thrown = "an exception";
  }
  t.wait = Wait::Exited;
  switch_to_scheduler(b, t, true);
  __builtin_unreachable();
}

std::string thread_name(const Block& b, const Thread& t) {
  (void)b;
  char buf[96];
  std::snprintf(buf, sizeof buf, "thread (%u,%u,%u) (warp %d lane %d)", t.pub.idx.x, t.pub.idx.y, t.pub.idx.z,
                t.pub.warp, t.pub.lane);
  return buf;
}

const char* op_name(WarpOp op) {
  switch (op) {
    case WarpOp::SyncWarp: return "__syncwarp";
    case WarpOp::ShflIdx: return "__shfl_sync";
    case WarpOp::ShflUp: return "__shfl_up_sync";
    case WarpOp::ShflDown: return "__shfl_down_sync";
    case WarpOp::ShflXor: return "__shfl_xor_sync";
    case WarpOp::Ballot: return "__ballot_sync";
    case WarpOp::Any: return "__any_sync";
    case WarpOp::All: return "__all_sync";
  }
  return "?";
}

std::string hex(unsigned m) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", m);
  return buf;
}

// The lane a shuffle reads (CUDA C++ Programming Guide, "Warp Shuffle Functions"): -1 means
// "its own value" (the source falls outside the lane's segment of `width` lanes).
int shuffle_source(WarpOp op, int lane, int param, int width) {
  const int segment = lane & ~(width - 1);
  switch (op) {
    case WarpOp::ShflIdx: return segment + (param & (width - 1));
    case WarpOp::ShflUp: return (lane - segment) < param ? -1 : lane - param;
    case WarpOp::ShflDown: return (lane - segment) + param >= width ? -1 : lane + param;
    case WarpOp::ShflXor: {
      const int src = lane ^ param;
      return src >= segment + width ? -1 : src;   // later segments are out of reach
    }
    default: return -1;
  }
}

// Completes the warp operations whose every named lane has arrived. Returns whether any did;
// sets b.error on a misuse.
bool release_warps(Block& b) {
  bool released = false;
  const int n = int(b.threads.size());
  for (int w0 = 0; w0 < n && b.error.empty(); w0 += 32) {
    Thread* lanes = &b.threads[size_t(w0)];
    const int warp_size = std::min(32, n - w0);
    for (int l = 0; l < warp_size && b.error.empty(); ++l) {
      Thread& t = lanes[l];
      if (t.wait != Wait::Warp) continue;
      if (!(t.mask >> l & 1u)) {
        b.error = thread_name(b, t) + " calls " + op_name(t.op) + " with mask " + hex(t.mask) + ", which leaves itself out";
        return false;
      }
      bool ready = true;
      for (int j = 0; j < 32 && b.error.empty(); ++j) {
        if (!(t.mask >> j & 1u)) continue;
        if (j >= warp_size) {
          b.error = thread_name(b, t) + " calls " + op_name(t.op) + " with mask " + hex(t.mask) + ", naming lane " +
                    std::to_string(j) + ", which does not exist (" + std::to_string(n) + " threads in the block)";
        } else if (lanes[j].wait == Wait::Exited) {
          b.error = thread_name(b, t) + " calls " + op_name(t.op) + " with mask " + hex(t.mask) + ", naming lane " +
                    std::to_string(j) + ", which has exited";
        } else if (lanes[j].wait != Wait::Warp || lanes[j].mask != t.mask || lanes[j].op != t.op) {
          ready = false;
        }
      }
      if (!ready || !b.error.empty()) continue;
      if (t.op == WarpOp::ShflIdx || t.op == WarpOp::ShflUp || t.op == WarpOp::ShflDown || t.op == WarpOp::ShflXor) {
        for (int j = 0; j < warp_size; ++j) {
          if (!(t.mask >> j & 1u)) continue;
          Thread& u = lanes[j];
          if (u.width < 1 || u.width > 32 || (u.width & (u.width - 1))) {
            b.error = thread_name(b, u) + " calls " + op_name(u.op) + " with width " + std::to_string(u.width) +
                      " (a power of two up to 32)";
            return false;
          }
          const int src = shuffle_source(u.op, j, u.param, u.width);
          if (src >= 0 && !(t.mask >> src & 1u)) {
            b.error = thread_name(b, u) + " " + op_name(u.op) + " reads lane " + std::to_string(src) +
                      ", which is not in the mask " + hex(t.mask) + " (an inactive lane: undefined on a GPU)";
            return false;
          }
          u.result = src < 0 ? u.bits : lanes[src].bits;
        }
      } else {
        uint32_t ballot = 0;
        for (int j = 0; j < warp_size; ++j)
          if ((t.mask >> j & 1u) && lanes[j].bits) ballot |= 1u << j;
        for (int j = 0; j < warp_size; ++j) {
          if (!(t.mask >> j & 1u)) continue;
          Thread& u = lanes[j];
          u.result = t.op == WarpOp::Ballot ? ballot
                     : t.op == WarpOp::Any  ? uint64_t(ballot != 0)
                     : t.op == WarpOp::All  ? uint64_t(ballot == t.mask)
                                            : 0;
        }
      }
      for (int j = 0; j < warp_size; ++j)
        if (t.mask >> j & 1u) lanes[j].wait = Wait::Running;
      released = true;
    }
  }
  return released;
}

// __syncthreads completes when every thread that has not exited waits there; a barrier that
// some threads skipped (exited, or wait at a warp operation that cannot complete) is reported.
bool release_barrier(Block& b) {
  int at = 0, exited = 0, elsewhere = 0;
  const Thread* first_elsewhere = nullptr;
  for (const Thread& t : b.threads) {
    if (t.wait == Wait::Barrier) ++at;
    else if (t.wait == Wait::Exited) ++exited;
    else if (!first_elsewhere) ++elsewhere, first_elsewhere = &t;
    else ++elsewhere;
  }
  if (at == 0) return false;
  if (at + exited == int(b.threads.size()) && exited == 0) {
    for (Thread& t : b.threads) t.wait = Wait::Running;
    return true;
  }
  b.error = std::to_string(at) + " threads wait at __syncthreads while " +
            (exited ? std::to_string(exited) + " threads of the block have exited" : "") +
            (exited && elsewhere ? " and " : "") +
            (elsewhere ? std::to_string(elsewhere) + " wait elsewhere (first: " + thread_name(b, *first_elsewhere) +
                             " at " + op_name(first_elsewhere->op) + ")"
                       : "") +
            ": a barrier some threads of the block skip (a hang or undefined behaviour on a GPU)";
  return false;
}

std::string describe_stuck(const Block& b) {
  for (const Thread& t : b.threads)
    if (t.wait == Wait::Warp)
      return thread_name(b, t) + " waits at " + op_name(t.op) + " with mask " + hex(t.mask) +
             " for lanes that never make the same call";
  return "the threads of the block cannot proceed";
}

std::string run_block(Block& b) {
  const size_t n = b.threads.size();
  for (size_t i = 0; i < n; ++i) {
    Thread& t = b.threads[i];
    t.wait = Wait::Running;
    fiber_init(t.ctx, tl_stacks.stack(i), StackPool::stack_bytes(), fiber_main, &t);
  }
  for (;;) {
    for (Thread& t : b.threads) {
      if (t.wait != Wait::Running) continue;
      b.running = &t;
      tl_thread = &t.pub;
      switch_to_fiber(b, t);
      if (!b.thrown.empty()) return "a thread threw: " + b.thrown;
    }
    bool all_exited = true;
    for (const Thread& t : b.threads) all_exited = all_exited && t.wait == Wait::Exited;
    if (all_exited) return "";
    if (release_warps(b)) continue;
    if (!b.error.empty()) return b.error;
    if (release_barrier(b)) continue;
    return b.error.empty() ? describe_stuck(b) : b.error;
  }
}

}  // namespace

void sync_threads() {
  Block& b = *tl_run;
  Thread& t = *b.running;
  t.wait = Wait::Barrier;
  switch_to_scheduler(b, t, false);
  tl_thread = &t.pub;
}

uint64_t warp_exchange(WarpOp op, unsigned mask, uint64_t bits, int param, int width) {
  Block& b = *tl_run;
  Thread& t = *b.running;
  t.wait = Wait::Warp;
  t.op = op, t.mask = mask, t.bits = bits, t.param = param, t.width = width;
  switch_to_scheduler(b, t, false);
  tl_thread = &t.pub;
  return t.result;
}

std::string run_grid(const std::string& kernel, dim3 grid, dim3 block, const std::function<void()>& body) {
  const size_t n = size_t(block.x) * block.y * block.z;
  auto b = std::make_unique<Block>();
  b->body = &body;
  b->pub.grid_dim = grid;
  b->pub.block_dim = block;
  b->threads.resize(n);
  for (size_t i = 0; i < n; ++i) {
    Thread& t = b->threads[i];
    t.pub.idx = uint3{unsigned(i % block.x), unsigned(i / block.x % block.y), unsigned(i / (size_t(block.x) * block.y))};
    t.pub.lane = int(i % 32);
    t.pub.warp = int(i / 32);
  }
  Block* outer = tl_run;   // a launch from inside a kernel is not supported; keep state sane
  tl_run = b.get();
  tl_block = &b->pub;
  std::string report;
  for (unsigned z = 0; z < grid.z && report.empty(); ++z)
    for (unsigned y = 0; y < grid.y && report.empty(); ++y)
      for (unsigned x = 0; x < grid.x && report.empty(); ++x) {
        b->pub.idx = uint3{x, y, z};
        const std::string e = run_block(*b);
        if (!e.empty())
          report = kernel + " block (" + std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z) + "): " + e;
      }
  tl_run = outer;
  tl_thread = nullptr;
  tl_block = nullptr;
  return report;
}

}  // namespace lmscope::cuda_emu
