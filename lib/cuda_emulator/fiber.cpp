#include "cuda_emulator/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>

#if !defined(__x86_64__)
#error "the CUDA emulator's fiber switch is written for x86-64 (System V ABI)"
#endif

// lmscope_fiber_switch(void** save_sp, void* new_sp): pushes the callee-saved registers and
// the floating-point control words, stores the stack pointer in *save_sp, loads new_sp, pops
// the same set and returns into the resumed fiber. A fresh fiber's first "return" lands in
// lmscope_fiber_start, which calls entry(arg) (kept in r13 and r12 by fiber_init).
asm(R"(
  .text
  .globl lmscope_fiber_switch
  .type lmscope_fiber_switch, @function
lmscope_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size lmscope_fiber_switch, .-lmscope_fiber_switch

  .globl lmscope_fiber_start
  .type lmscope_fiber_start, @function
lmscope_fiber_start:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size lmscope_fiber_start, .-lmscope_fiber_start
  .section .note.GNU-stack,"",@progbits
  .text
)");

extern "C" void lmscope_fiber_switch(void** save_sp, void* new_sp);
extern "C" void lmscope_fiber_start();

namespace lmscope::cuda_emu {

void fiber_init(FiberContext& f, void* stack, size_t size, void (*entry)(void*), void* arg) {
  // The frame lmscope_fiber_switch pops, from the lowest address: control words, r15, r14,
  // r13 (entry), r12 (arg), rbx, rbp, the return address (lmscope_fiber_start). The top is
  // 16-byte aligned, so the call in lmscope_fiber_start enters `entry` with the ABI's alignment.
  auto top = (reinterpret_cast<uintptr_t>(stack) + size) & ~uintptr_t(15);
  auto* frame = reinterpret_cast<uint64_t*>(top) - 8;
  uint32_t mxcsr;
  uint16_t fpucw;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpucw));
  std::memset(frame, 0, 8 * sizeof(uint64_t));
  std::memcpy(reinterpret_cast<char*>(frame), &mxcsr, 4);
  std::memcpy(reinterpret_cast<char*>(frame) + 4, &fpucw, 2);
  frame[3] = reinterpret_cast<uint64_t>(entry);                  // r13
  frame[4] = reinterpret_cast<uint64_t>(arg);                    // r12
  frame[7] = reinterpret_cast<uint64_t>(&lmscope_fiber_start);   // return address
  f.sp = frame;
}

void fiber_switch(FiberContext& from, const FiberContext& to) { lmscope_fiber_switch(&from.sp, to.sp); }

namespace {
size_t page_bytes() { return size_t(sysconf(_SC_PAGESIZE)); }
}  // namespace

size_t StackPool::stack_bytes() {
  // Kernels keep a few hundred bytes of registers per thread; sanitizers and unoptimized code
  // take far more stack per frame.
#if defined(LMSCOPE_EMULATOR_ASAN)
  return size_t(512) << 10;
#else
  return size_t(64) << 10;
#endif
}

StackPool::~StackPool() {
  if (region_.base) munmap(region_.base, region_.bytes);
}

void StackPool::grow(size_t n) {
  if (region_.base) munmap(region_.base, region_.bytes);
  const size_t slot = stack_bytes() + page_bytes();
  const size_t bytes = slot * n;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  for (size_t i = 0; i < n; ++i) mprotect(static_cast<char*>(p) + i * slot, page_bytes(), PROT_NONE);
  region_ = {p, bytes};
  count_ = n;
}

void* StackPool::stack(size_t i) {
  if (i >= count_) grow(i < 1024 ? 1024 : i + 1);   // a block has at most 1024 threads
  return static_cast<char*>(region_.base) + i * (stack_bytes() + page_bytes()) + page_bytes();
}

}  // namespace lmscope::cuda_emu
