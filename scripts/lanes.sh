# Shared by scripts/test-cpu-kernels.sh and scripts/test-blas-kernels.sh (sourced, not run): the
# processor's instruction sets, and the tests that are run again in each lane.
#
# `has FLAG...`: whether /proc/cpuinfo lists every FLAG (avx2, fma, avx512f, avx512_bf16, ...).
lane_flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
has() { for f in "$@"; do [[ " $lane_flags " == *" $f "* ]] || return 1; done; }
# The numeric tests (ctest -R): the HF goldens, llama.cpp's logits, the engine's numerics, the
# quantization and lens tests, the CLI goldens. What another kernel's summation order can change.
numeric_tests='Golden|LlamaCpp|Decoder|Observation|Attention|BlockMatmul|BlockPrefill|HalfMatmul|GgufHalf|Q8|Quant|Lens|Score|Cache|Padding|Tolerance|InterventionsVsHF'
