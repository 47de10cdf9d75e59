// Shared by the CUDA backend's translation units: error checks, the backend's stream, launch
// geometry. Internal to kernels/cuda/.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace phalanx::kernels::cuda {

// Throws std::runtime_error naming the call and CUDA's message.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(status));
  }
}
#define PHALANX_CUDA(call) ::phalanx::kernels::cuda::check((call), #call)
// After a launch: configuration errors now, execution errors at the next synchronization.
#define PHALANX_CUDA_LAUNCHED(name) ::phalanx::kernels::cuda::check(cudaGetLastError(), name)

// The one stream every backend call is queued on (created on first use).
cudaStream_t stream();

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n items: enough to fill the device, no more.
inline unsigned gridFor(std::size_t n, int threads = kThreads) {
  const std::size_t wanted = (n + std::size_t(threads) - 1) / std::size_t(threads);
  const std::size_t cap = 132 * 16;  // ~16 resident blocks per SM on an H100; fine on an A100
  return unsigned(wanted == 0 ? 1 : (wanted < cap ? wanted : cap));
}

}  // namespace phalanx::kernels::cuda
