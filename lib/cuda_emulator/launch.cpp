#include "cuda_emulator/launch.h"

#include "cuda_emulator/block_runner.h"
#include "cuda_emulator/runtime_state.h"

namespace lmscope::cuda_emu {

std::string kernel_name(const char* pretty) {
  std::string s(pretty);
  const std::string key = "Kernel = ";
  size_t at = s.find(key);
  if (at == std::string::npos) return s;
  at += key.size();
  // g++: "[with auto Kernel = k<float, 1>; Args = {...}]"; clang: "[Kernel = &k<float, 1>, Args =
  // <...>]". The name ends at ';' or ']', or at a ',' outside its template arguments.
  size_t end = at;
  for (int depth = 0; end < s.size(); ++end) {
    const char c = s[end];
    if (c == '<') ++depth;
    else if (c == '>') --depth;
    else if (c == ';' || c == ']' || (c == ',' && depth == 0)) break;
  }
  std::string name = s.substr(at, end - at);
  if (name.rfind("& ", 0) == 0) name = name.substr(2);
  if (name.rfind('&', 0) == 0) name = name.substr(1);
  // drop namespaces: lmscope::cuda::{anonymous}::gemv_kernel<float, 1> -> gemv_kernel<float, 1>
  const size_t lt = name.find('<');
  const size_t colons = name.rfind("::", lt == std::string::npos ? std::string::npos : lt);
  return colons == std::string::npos ? name : name.substr(colons + 2);
}

void launch(const std::string& kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t st,
            std::function<void()> body) {
  // The limits of compute capability 9.0 (CUDA C++ Programming Guide, "Technical
  // Specifications per Compute Capability").
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  std::string bad;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0)
    bad = "a zero grid or block dimension";
  else if (threads > 1024)
    bad = std::to_string(threads) + " threads per block (at most 1024)";
  else if (block.z > 64)
    bad = "block.z " + std::to_string(block.z) + " (at most 64)";
  else if (grid.y > 65535 || grid.z > 65535)
    bad = "grid.y or grid.z above 65535";
  else if (smem > 48 * 1024)
    bad = std::to_string(smem) + " bytes of dynamic shared memory (48 KiB without an opt-in)";
  if (!bad.empty()) {
    fail(cudaErrorInvalidConfiguration, "launch of " + kernel + ": " + bad);
    return;
  }
  const cudaError_t e = submit(st, Work{kernel, [kernel, grid, block, body = std::move(body)]() -> cudaError_t {
                                          const std::string report = run_grid(kernel, grid, block, body);
                                          return report.empty() ? cudaSuccess : fail(cudaErrorLaunchFailure, report);
                                        }});
  (void)e;   // already the last error when it failed
}

}  // namespace lmscope::cuda_emu
