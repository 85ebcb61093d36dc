// Fibers: many stacks on one OS thread, switched by hand. The emulator runs each CUDA thread
// of a block as a fiber, and switches only where CUDA threads wait for each other
// (__syncthreads, warp shuffles, votes): everything between two such points runs straight
// through, as one thread of a warp would.
//
// glibc's swapcontext also saves the signal mask with a system call (3 us per round trip on
// this VM); a launch of the decode matmul starts ~1.5 million CUDA threads, so the switch here
// saves only what the x86-64 System V ABI says a callee keeps (rbx, rbp, r12-r15, the stack
// pointer, MXCSR and the x87 control word): ~10 ns.
#pragma once
#include <cstddef>

// AddressSanitizer must be told about every stack switch (block_runner.cpp) and needs bigger
// stacks: LMSCOPE_EMULATOR_ASAN is 1 under it (gcc and clang spell the test differently).
#if defined(__SANITIZE_ADDRESS__)
#define LMSCOPE_EMULATOR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LMSCOPE_EMULATOR_ASAN 1
#endif
#endif

namespace lmscope::cuda_emu {

struct FiberContext {
  void* sp = nullptr;   // where the saved registers of a suspended fiber are
};

// Prepares `f` so that the first fiber_switch to it calls entry(arg) on the stack
// [stack, stack + size). entry must never return: it switches away for the last time.
void fiber_init(FiberContext& f, void* stack, size_t size, void (*entry)(void*), void* arg);

// Suspends the running code into `from` and resumes `to`.
void fiber_switch(FiberContext& from, const FiberContext& to);

// Stacks for the fibers of one block, reused from launch to launch on this OS thread. Each
// stack has an inaccessible guard page below it: an overflow faults instead of writing over
// the next fiber's stack.
class StackPool {
 public:
  ~StackPool();
  // The i-th stack (made on first use): [*base, *base + stack_bytes()).
  void* stack(size_t i);
  static size_t stack_bytes();

 private:
  void grow(size_t n);
  struct Region {
    void* base;
    size_t bytes;
  };
  Region region_{nullptr, 0};
  size_t count_ = 0;
};

}  // namespace lmscope::cuda_emu
