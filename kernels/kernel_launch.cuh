// The one way kernels/*.cu launch a kernel, for nvcc and for the CPU emulator alike:
//   launch<kernel>(grid, block, dynamic_shared_bytes, stream, args...)
// nvcc: kernel<<<grid, block, smem, stream>>>(args...). The emulated build
// (LMSCOPE_CUDA=EMULATED, lib/cuda_emulator/device.h) runs every thread of the grid on the CPU.
// So no kernel is written twice; launch errors are read as before (LMSCOPE_LAUNCHED).
#pragma once
#include <cuda_runtime.h>

#include <utility>

#if defined(LMSCOPE_EMULATED_DEVICE_CODE)
#include "cuda_emulator/launch.h"
#endif

namespace lmscope::cuda {

template <auto Kernel, class... Args>
void launch(dim3 grid, dim3 block, size_t smem, cudaStream_t st, Args&&... args) {
#if defined(LMSCOPE_EMULATED_DEVICE_CODE)
  cuda_emu::launch_kernel<Kernel>(__PRETTY_FUNCTION__, grid, block, smem, st, std::forward<Args>(args)...);
#else
  Kernel<<<grid, block, smem, st>>>(std::forward<Args>(args)...);
#endif
}

}  // namespace lmscope::cuda
