// The CPU kernel table (lib/backend/cpu/kernel_table.h): every family has a build for every
// instruction set this binary compiled; each family runs the build the table picks for the
// chosen set; LMSCOPE_CPU_KERNEL is read in one place, and a bad value is refused in one line
// by whichever family is used first (each in a fresh process: the choice is made once).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cpu/kernel_table.h"
#include "random_blocks.h"

using namespace lmscope;
using cpu::Isa;

namespace {

constexpr Isa kSets[] = {Isa::portable, Isa::avx2, Isa::avx512};

// Every build the table names is a function, not null, where the table says it is compiled.
template <class Build, class Entry>
void expect_compiled_builds(const cpu::KernelFamily<Build>& family, Entry entry) {
  for (const Isa isa : kSets)
    if (family.compiled[size_t(isa)]) {
      EXPECT_TRUE(entry(family.builds[size_t(isa)])) << family.name << " " << cpu::isa_name(isa);
    }
}

TEST(KernelTable, EveryFamilyHasABuildForEverySetThisBinaryCompiled) {
  const std::set<std::string> families = {"block_matmul", "q8_matmul",   "q8k_matmul",
                                          "attention_row", "half_matmul", "prefill_panel"};
  std::set<std::string> seen;
  for (const cpu::KernelBuildRow& row : cpu::kernel_build_rows()) {
    seen.insert(row.family);
    const std::string at = row.family + " " + cpu::isa_name(row.isa);
#if defined(__x86_64__)
    // Every SIMD build is compiled into every x86-64 binary (a function attribute, not
    // -march); prefill_panel's widest is AVX2 (it converts; it does not multiply).
    EXPECT_EQ(row.compiled, !(row.family == "prefill_panel" && row.isa == Isa::avx512)) << at;
#else
    EXPECT_EQ(row.compiled, row.isa == Isa::portable) << at;
#endif
    // A build runs where it is compiled and the processor has what it needs; the set a family
    // takes when asked for one is never wider, and it runs.
    EXPECT_LE(int(row.picked), int(row.isa)) << at;
    EXPECT_TRUE(cpu::processor_runs(row.picked)) << at;
    if (row.runs) {
      EXPECT_EQ(row.picked, row.isa) << at;
    }
    if (row.isa == Isa::portable) {
      EXPECT_TRUE(row.compiled && row.runs) << at;
    }
  }
  EXPECT_EQ(seen, families);

  const cpu::KernelTable& t = cpu::kernel_table();
  expect_compiled_builds(t.block_matmul, [](cpu::BlockOutputs f) { return f != nullptr; });
  expect_compiled_builds(t.q8_matmul, [](const cpu::Q8MatmulBuild& b) { return b.outputs && b.quantize; });
  expect_compiled_builds(t.q8k_matmul, [](const cpu::Q8KMatmulBuild& b) { return b.outputs != nullptr; });
  expect_compiled_builds(t.attention_row, [](const cpu::AttentionRowLoops& l) { return l.scores && l.mix; });
  expect_compiled_builds(t.half_matmul, [](const cpu::HalfMatmulBuild& b) { return b.outputs != nullptr; });
  expect_compiled_builds(t.prefill_panel, [](const cpu::PrefillPanelBuild& b) { return b.dequantize && b.widen; });
}

// What each family reports running is the table's pick for the chosen set (the process's
// LMSCOPE_CPU_KERNEL: scripts/test-cpu-kernels.sh runs this under each).
TEST(KernelTable, EachFamilyRunsThePickForTheChosenSet) {
  const Isa isa = cpu::chosen_isa();
  const cpu::KernelTable& t = cpu::kernel_table();
  const cpu::ChosenKernels& c = cpu::chosen_kernels();
  EXPECT_EQ(cpu::block_matmul_kernel(), std::string(cpu::isa_name(t.block_matmul.pick(isa))));
  EXPECT_EQ(cpu::q8_matmul_kernel(), std::string(cpu::isa_name(t.q8_matmul.pick(isa))));
  EXPECT_EQ(cpu::q8k_matmul_kernel(), std::string(cpu::isa_name(t.q8k_matmul.pick(isa))));
  EXPECT_EQ(c.attention_row.isa, t.attention_row.pick(isa));
  EXPECT_EQ(cpu::attention_row_loops().scores, t.attention_row.builds[size_t(c.attention_row.isa)].scores);
  EXPECT_EQ(cpu::half_matmul_chosen_outputs(), t.half_matmul.builds[size_t(t.half_matmul.pick(isa))].outputs);
  EXPECT_EQ(c.prefill_panel.isa, t.prefill_panel.pick(isa));
  // The block and half kernels need nothing beyond a set's base: they run the chosen set itself.
  EXPECT_EQ(c.block_matmul.isa, isa);
  EXPECT_EQ(c.half_matmul.isa, isa);
  const char* env = std::getenv("LMSCOPE_CPU_KERNEL");
  if (env && *env) {
    EXPECT_EQ(std::string(cpu::isa_name(isa)), env);
  }
}

// Three processors, as parse_cpu_kernel sees them.
bool runs_portable_only(Isa isa) { return isa == Isa::portable; }
bool runs_avx2(Isa isa) { return isa != Isa::avx512; }
bool runs_avx512(Isa) { return true; }

TEST(KernelTable, UnsetTakesTheWidestSetTheProcessorRuns) {
  EXPECT_EQ(cpu::parse_cpu_kernel(nullptr, runs_portable_only), Isa::portable);
  EXPECT_EQ(cpu::parse_cpu_kernel("", runs_avx2), Isa::avx2);
  EXPECT_EQ(cpu::parse_cpu_kernel(nullptr, runs_avx512), Isa::avx512);
  EXPECT_EQ(cpu::parse_cpu_kernel("portable", runs_avx512), Isa::portable);
  EXPECT_EQ(cpu::parse_cpu_kernel("avx2", runs_avx512), Isa::avx2);
}

// The error's text, or "" when parse_cpu_kernel accepted the value.
std::string refusal(const char* value, bool (*runs)(Isa)) {
  try {
    cpu::parse_cpu_kernel(value, runs);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(KernelTable, ABadValueIsOneLineNamingTheVariable) {
  EXPECT_EQ(refusal("avx9", runs_avx512), "LMSCOPE_CPU_KERNEL=avx9: expected avx512, avx2 or portable");
  EXPECT_EQ(refusal("AVX2", runs_avx512), "LMSCOPE_CPU_KERNEL=AVX2: expected avx512, avx2 or portable");
  EXPECT_EQ(refusal("avx512", runs_avx2), "LMSCOPE_CPU_KERNEL=avx512: this processor does not run it");
  EXPECT_EQ(refusal("avx2", runs_portable_only), "LMSCOPE_CPU_KERNEL=avx2: this processor does not run it");
}

// Each family's first use, in a process that has used no other: what a caller of that family
// alone runs into. The statement runs in a fresh process (the "threadsafe" death-test style
// executes the test binary again), so the choice has not been made yet.
struct FirstUse {
  const char* family;
  std::function<void()> use;
};

std::vector<FirstUse> first_uses() {
  static const test::RandomBlocks q8_0 = test::random_blocks(BlockType::Q8_0, 2, 32, 1),
                                  q4_k = test::random_blocks(BlockType::Q4_K, 2, 256, 2);
  static std::vector<float> x(256, 0.5f), out(64);
  static std::vector<uint16_t> half(64, 0x3f80);   // bf16 1.0
  return {
      {"block_matmul", [] { cpu::block_matmul(out.data(), x.data(), *q8_0.q, nullptr, 1); }},
      {"q8_matmul",
       [] {
         cpu::Q8Rows rows;
         cpu::quantize_rows_q8(x.data(), 1, 32, rows);
       }},
      {"q8k_matmul",
       [] {
         cpu::Q8KRows rows;
         cpu::quantize_rows_q8k(x.data(), 1, 256, rows);   // the quantizer is one build: not a family
         cpu::q8k_matmul(out.data(), rows, *q4_k.q, nullptr);
       }},
      {"attention_row", [] { cpu::attention_row_loops(); }},
      {"half_matmul",
       [] { cpu::half_matmul(out.data(), x.data(), {DType::BF16, 2, 32, half.data()}, nullptr, 1); }},
      {"prefill_panel", [] { cpu::dequantize_panel(*q8_0.q, 0, 2, out.data()); }},
  };
}

// Exits 3 when `use` is refused with a one-line error (printed), 2 for a longer one, 0 when
// it was not refused at all.
[[noreturn]] void use_with_a_bad_kernel(const std::function<void()>& use) {
  setenv("LMSCOPE_CPU_KERNEL", "avx9", 1);
  try {
    use();
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "refused: %s\n", e.what());
    std::exit(std::strchr(e.what(), '\n') ? 2 : 3);
  }
  std::exit(0);
}

TEST(KernelTableDeathTest, ABadValueIsRefusedByWhicheverFamilyIsUsedFirst) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (const FirstUse& f : first_uses())
    EXPECT_EXIT(use_with_a_bad_kernel(f.use), testing::ExitedWithCode(3),
                "refused: LMSCOPE_CPU_KERNEL=avx9: expected avx512, avx2 or portable")
        << f.family;
}

}  // namespace
