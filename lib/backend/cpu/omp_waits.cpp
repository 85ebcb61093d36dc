#include "backend/cpu/omp_waits.h"

#include <omp.h>
#include <unistd.h>

#include <cstdlib>

namespace lmscope::cpu {

void settle_openmp_waits(char** argv) {
#if defined(__clang__)
  // clang's -fopenmp links LLVM's libomp (the sanitizer build, scripts/configure-asan.sh), which
  // reads KMP_BLOCKTIME, not GOMP_SPINCOUNT: executing again would change nothing.
  (void)argv;
#else
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  if (omp_get_max_threads() < 2) return;   // nobody waits for anybody
  if (setenv("GOMP_SPINCOUNT", kDefaultSpinCount, 0) != 0) return;
  execv("/proc/self/exe", argv);
  // Only when the exec failed: this process's libgomp keeps its default; so should its children.
  unsetenv("GOMP_SPINCOUNT");
#endif
}

}  // namespace lmscope::cpu
