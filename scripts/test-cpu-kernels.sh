#!/usr/bin/env bash
# The numeric tests again under each CPU kernel this processor runs, forced one at a time
# (LMSCOPE_CPU_KERNEL; the default run of scripts/test.sh takes the widest). A user's machine
# may pick another kernel than the one CI's processor picks by default: an AVX2-only laptop
# runs the avx2 kernels, a machine without AVX2 the portable ones. So CI (.ci/run) runs the
# goldens, the llama.cpp reference, the engine's numerics, the quantization and lens tests and
# the SmolLM2 golden under every kernel its processor can run.
#   scripts/test-cpu-kernels.sh                 after scripts/test.sh (uses build/)
#   scripts/test-cpu-kernels.sh avx2            one kernel
set -euo pipefail
cd "$(dirname "$0")/.."
# The default run took the widest kernel (avx512 where the processor has AVX-512 F, else avx2
# where it has AVX2 + FMA + F16C, else portable: lib/backend/cpu/kernel_table.h). Here: each
# narrower one.
. scripts/lanes.sh
kernels=("$@")
if [ ${#kernels[@]} -eq 0 ]; then
  kernels=(portable)
  has avx512f && has avx2 fma f16c && kernels+=(avx2)
fi
# The numeric tests (scripts/lanes.sh), and KernelTable.*: each family runs the table's build
# for the forced set. The lessons' numbers are held to every sgemm kernel by
# scripts/test-blas-kernels.sh; lmscope's own kernels change them as little (docs/tolerances.md).
for k in "${kernels[@]}"; do
  echo "test-cpu-kernels: LMSCOPE_CPU_KERNEL=$k"
  LMSCOPE_CPU_KERNEL=$k OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} \
    ctest --test-dir build --output-on-failure -j2 -R "$numeric_tests|KernelTable" -E 'Walkthrough|Readme'
done
