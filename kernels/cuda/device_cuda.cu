// CUDA runtime probe: how many devices answer. Built only when CMake finds nvcc.
#include <cuda_runtime.h>

namespace phalanx::kernels {

int cudaDeviceCountImpl() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error so later calls start clean
    return 0;
  }
  return n;
}

}  // namespace phalanx::kernels
