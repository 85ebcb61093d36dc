// The backend factory. It lives beside the CPU backend because every build has that one;
// the CUDA backend registers here when it is built.
#include <stdexcept>

#include "backend/cpu/cpu_backend.h"

namespace lmscope {

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "cpu" || name == "auto") return std::make_unique<CpuBackend>();
  if (name == "cuda")
    throw std::runtime_error("--backend cuda: the CUDA backend is not built yet; use --backend cpu");
  throw std::runtime_error("--backend: unknown backend '" + name + "' (cpu, cuda, auto)");
}

}  // namespace lmscope
