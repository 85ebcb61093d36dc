// The kernel table (kernel_table.h): the processor's instruction sets, LMSCOPE_CPU_KERNEL, and
// every family's builds.
#include "backend/cpu/kernel_table.h"

#include "backend/cpu/q8_gemm.h"

#include <cstdlib>
#include <stdexcept>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace lmscope::cpu {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx512: return "avx512";
    case Isa::avx2: return "avx2";
    case Isa::portable: break;
  }
  return "portable";
}

namespace {

struct ProcessorSets {
  bool avx2 = false, avx512 = false, avx512_vnni = false;
};

// Read once. F16C comes from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does
// not know "f16c".
ProcessorSets read_processor() {
  ProcessorSets p;
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  const bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
  p.avx2 = f16c && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  p.avx512 = p.avx2 && __builtin_cpu_supports("avx512f");
  p.avx512_vnni = p.avx512 && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vnni");
#endif
  return p;
}

const ProcessorSets& processor() {
  static const ProcessorSets p = read_processor();
  return p;
}

}  // namespace

bool processor_runs(Isa isa) {
  switch (isa) {
    case Isa::avx512: return processor().avx512;
    case Isa::avx2: return processor().avx2;
    case Isa::portable: break;
  }
  return true;
}

bool processor_has_avx512_vnni() { return processor().avx512_vnni; }

Isa parse_cpu_kernel(const char* value, bool (*runs)(Isa)) {
  if (!value || !*value) return runs(Isa::avx512) ? Isa::avx512 : runs(Isa::avx2) ? Isa::avx2 : Isa::portable;
  const std::string want = value;
  for (const Isa isa : {Isa::portable, Isa::avx2, Isa::avx512})
    if (want == isa_name(isa)) {
      if (!runs(isa)) throw std::runtime_error("LMSCOPE_CPU_KERNEL=" + want + ": this processor does not run it");
      return isa;
    }
  throw std::runtime_error("LMSCOPE_CPU_KERNEL=" + want + ": expected avx512, avx2 or portable");
}

Isa chosen_isa() {
  static const Isa isa = parse_cpu_kernel(std::getenv("LMSCOPE_CPU_KERNEL"), processor_runs);
  return isa;
}

// ---- the table -----------------------------------------------------------------------------
// Off x86-64 only the portable builds are compiled (the SIMD files then hold stubs that throw,
// which the table never names).
#if defined(__x86_64__)
constexpr std::array<bool, kIsaCount> kAllSets{true, true, true}, kUpToAvx2{true, true, false};
#else
constexpr std::array<bool, kIsaCount> kAllSets{true, false, false}, kUpToAvx2{true, false, false};
#endif
constexpr std::array<bool (*)(), kIsaCount> kBaseOnly{nullptr, nullptr, nullptr},
    kAvx512Vnni{nullptr, nullptr, processor_has_avx512_vnni};

const KernelTable& kernel_table() {
  static const KernelTable table{
      {"block_matmul",
       {block_matmul_portable_outputs, block_matmul_avx2_outputs, block_matmul_avx512_outputs},
       kAllSets,
       kBaseOnly},
      {"q8_matmul",
       {Q8MatmulBuild{q8_outputs_portable, q8_quantize_portable, nullptr},
        Q8MatmulBuild{q8_outputs_avx2, q8_quantize_avx2, q8_gemm_outputs_avx2},
        Q8MatmulBuild{q8_outputs_avx512, q8_quantize_avx2, q8_gemm_outputs_avx512}},
       kAllSets,
       kAvx512Vnni},
      {"q8k_matmul",
       {Q8KMatmulBuild{q8k_outputs_portable, nullptr}, Q8KMatmulBuild{q8k_outputs_avx2, q8k_gemm_outputs_avx2},
        Q8KMatmulBuild{q8k_outputs_avx512, q8k_gemm_outputs_avx512}},
       kAllSets,
       kAvx512Vnni},
      {"attention_row",
       {kScalarRowLoops, AttentionRowLoops{"avx2", attention_scores_avx2, attention_mix_avx2, true},
        AttentionRowLoops{"avx512", attention_scores_avx512, attention_mix_avx512, true}},
       kAllSets,
       kBaseOnly},
      {"half_matmul",
       {HalfMatmulBuild{half_matmul_portable_outputs}, HalfMatmulBuild{half_matmul_avx2_outputs},
        HalfMatmulBuild{half_matmul_avx512_outputs}},
       kAllSets,
       kBaseOnly},
      {"prefill_panel",
       {PrefillPanelBuild{dequantize_block_rows, widen_half_rows_portable},
        PrefillPanelBuild{dequantize_panel_avx2, widen_half_rows_avx2}, PrefillPanelBuild{}},
       kUpToAvx2,
       kBaseOnly},
  };
  return table;
}

namespace {
template <class Build>
ChosenKernel<Build> choose(const KernelFamily<Build>& family, Isa isa) {
  const Isa picked = family.pick(isa);
  return {picked, family.builds[size_t(picked)]};
}

template <class Build>
void add_rows(std::vector<KernelBuildRow>& rows, const KernelFamily<Build>& family) {
  for (const Isa isa : {Isa::portable, Isa::avx2, Isa::avx512})
    rows.push_back({family.name, isa, family.compiled[size_t(isa)], family.runs(isa), family.pick(isa)});
}
}  // namespace

const ChosenKernels& chosen_kernels() {
  static const ChosenKernels chosen = [] {
    const Isa isa = chosen_isa();
    const KernelTable& t = kernel_table();
    return ChosenKernels{choose(t.block_matmul, isa),  choose(t.q8_matmul, isa),     choose(t.q8k_matmul, isa),
                         choose(t.attention_row, isa), choose(t.half_matmul, isa), choose(t.prefill_panel, isa)};
  }();
  return chosen;
}

std::vector<KernelBuildRow> kernel_build_rows() {
  const KernelTable& t = kernel_table();
  std::vector<KernelBuildRow> rows;
  add_rows(rows, t.block_matmul);
  add_rows(rows, t.q8_matmul);
  add_rows(rows, t.q8k_matmul);
  add_rows(rows, t.attention_row);
  add_rows(rows, t.half_matmul);
  add_rows(rows, t.prefill_panel);
  return rows;
}

}  // namespace lmscope::cpu
