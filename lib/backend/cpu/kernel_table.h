// Which build of each CPU kernel family runs: one table, one choice.
//
// A family is one computation the CPU backend has in several builds, one per instruction set:
//   block_matmul   decode's matmul over GGUF blocks, float32 activations (block_matmul.h)
//   q8_matmul      --cpu-activations q8 over the 32-weight block types, with its row quantizer (q8_matmul.h)
//   q8k_matmul     --cpu-activations q8 over the K-quants (q8k_matmul.h)
//   attention_row  a decode row's two loops over the KV cache (attention_row.h)
//   half_matmul    decode's matmul over bf16/f16 weights (half_matmul.h)
//   prefill_panel  prefill's panels: GGUF blocks dequantized, bf16/f16 rows widened (exact)
// The instruction sets, narrowest first:
//   portable  plain C++: the reference the tests hold every other build to
//   avx2      AVX2 + FMA + F16C (every AVX2 processor has F16C; the f16 scales need it)
//   avx512    those + AVX-512F
// A SIMD build is compiled for any x86-64 (a function attribute, not -march), so a binary
// carries all three and picks at run time.
//
// The choice is made once, at the first use of any family (chosen_kernels()):
// LMSCOPE_CPU_KERNEL=portable|avx2|avx512 when set, else the widest set the processor runs.
// An unknown name, or a set this processor does not run, is a std::runtime_error of one line,
// whichever family asks first. Every family then runs its build for that set, or its next
// narrower one where the set's build needs more than the set's base and the processor lacks
// it: q8_matmul's and q8k_matmul's AVX-512 builds need AVX-512 VL, BW and VNNI too, and give
// the AVX2 builds' numbers bit for bit, so the fallback changes no number. A family without
// a build for a set (prefill_panel has no AVX-512 one) runs the next narrower one.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/attention_row.h"
#include "backend/cpu/block_matmul.h"
#include "backend/cpu/block_prefill.h"
#include "backend/cpu/half_matmul.h"
#include "backend/cpu/q8_matmul.h"
#include "backend/cpu/q8k_gemm.h"
#include "backend/cpu/q8k_matmul.h"

namespace lmscope::cpu {

enum class Isa { portable = 0, avx2 = 1, avx512 = 2 };
constexpr int kIsaCount = 3;
const char* isa_name(Isa isa);   // "portable", "avx2", "avx512"

// Whether this processor runs the set's base (portable: always; read from CPUID once).
bool processor_runs(Isa isa);
// AVX-512 F + VL + BW + VNNI: what the q8 families' AVX-512 builds need beyond the base.
bool processor_has_avx512_vnni();

// LMSCOPE_CPU_KERNEL's value (null or empty: unset) as a set, checked against `runs`: the
// one-line std::runtime_error for an unknown name or a set `runs` refuses; unset, the widest
// set `runs` accepts.
Isa parse_cpu_kernel(const char* value, bool (*runs)(Isa));

// The chosen set: parse_cpu_kernel(getenv("LMSCOPE_CPU_KERNEL"), processor_runs), once.
Isa chosen_isa();

// One family's builds, indexed by Isa. A build is what the family calls at run time (one
// function pointer, or a few that go together); `compiled` is false where this binary has no
// such build (a SIMD set off x86-64, prefill_panel's AVX-512); `needs` says whether this
// processor runs the build, beyond the set's base (null: the base is all it needs).
template <class Build>
struct KernelFamily {
  const char* name;
  std::array<Build, kIsaCount> builds;
  std::array<bool, kIsaCount> compiled;
  std::array<bool (*)(), kIsaCount> needs;

  bool runs(Isa isa) const {
    const int i = int(isa);
    return compiled[i] && processor_runs(isa) && (!needs[i] || needs[i]());
  }
  // The build for `isa`, or the widest narrower one this processor runs.
  Isa pick(Isa isa) const {
    while (isa != Isa::portable && !runs(isa)) isa = Isa(int(isa) - 1);
    return isa;
  }
};

// What each family calls, per build.
struct Q8MatmulBuild {
  Q8Outputs outputs;
  Q8Quantize quantize;   // the rows' quantizer that goes with it (AVX2 in both SIMD builds)
  Q8Outputs gemm;        // the same outputs as a GEMM over groups of 8 rows (q8_gemm.h); null: none
};
struct Q8KMatmulBuild {
  Q8KOutputs outputs;
  Q8KOutputs gemm;   // the same outputs as a GEMM over groups of 8 rows (q8k_gemm.h); null: none
};
struct HalfMatmulBuild {
  HalfOutputs outputs;
};
struct PrefillPanelBuild {
  void (*dequantize)(const QuantBlocks& W, int64_t row0, int64_t n, float* out);
  void (*widen)(const HalfMatrix& W, int64_t row0, int64_t n, float* out);
};

// The table: every family and its builds.
struct KernelTable {
  KernelFamily<BlockOutputs> block_matmul;
  KernelFamily<Q8MatmulBuild> q8_matmul;
  KernelFamily<Q8KMatmulBuild> q8k_matmul;
  KernelFamily<AttentionRowLoops> attention_row;
  KernelFamily<HalfMatmulBuild> half_matmul;
  KernelFamily<PrefillPanelBuild> prefill_panel;
};
const KernelTable& kernel_table();

// A family's build for the chosen set.
template <class Build>
struct ChosenKernel {
  Isa isa;
  Build build;
};
struct ChosenKernels {
  ChosenKernel<BlockOutputs> block_matmul;
  ChosenKernel<Q8MatmulBuild> q8_matmul;
  ChosenKernel<Q8KMatmulBuild> q8k_matmul;
  ChosenKernel<AttentionRowLoops> attention_row;
  ChosenKernel<HalfMatmulBuild> half_matmul;
  ChosenKernel<PrefillPanelBuild> prefill_panel;
};
// Made on the first call (chosen_isa() then each family's pick); throws its error until the
// variable is fixed.
const ChosenKernels& chosen_kernels();

// The table in rows, for the tests and lmscope-bench: per family and set, whether the build
// is compiled, whether this processor runs it, and the set the family runs when `isa` is asked.
struct KernelBuildRow {
  std::string family;
  Isa isa;
  bool compiled, runs;
  Isa picked;
};
std::vector<KernelBuildRow> kernel_build_rows();

}  // namespace lmscope::cpu
