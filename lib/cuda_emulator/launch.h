// A kernel launch in the emulated build (kernels/kernel_launch.cuh calls launch_kernel): the
// arguments are converted to the kernel's parameter types and copied once, at the launch, as
// CUDA does; each CUDA thread then calls the kernel with its own copy of them.
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace lmscope::cuda_emu {

// Checks the configuration (CUDA's limits), then runs the grid or records it (stream capture).
// Errors go where CUDA puts them: cudaGetLastError.
void launch(const std::string& kernel, dim3 grid, dim3 block, size_t dynamic_smem, cudaStream_t st,
            std::function<void()> thread_body);

// "add_kernel" out of the launching template's __PRETTY_FUNCTION__ ("... [with auto Kernel = ...]").
std::string kernel_name(const char* pretty_function);

template <class F>
struct params_of;
template <class... P>
struct params_of<void (*)(P...)> {
  using type = std::tuple<std::decay_t<P>...>;
};

template <auto Kernel, class... Args>
void launch_kernel(const char* pretty_function, dim3 grid, dim3 block, size_t smem, cudaStream_t st, Args&&... args) {
  using Params = typename params_of<decltype(Kernel)>::type;
  auto params = std::make_shared<const Params>(std::forward<Args>(args)...);
  launch(kernel_name(pretty_function), grid, block, smem, st, [params] { std::apply(Kernel, *params); });
}

}  // namespace lmscope::cuda_emu
