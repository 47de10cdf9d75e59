#include "kernels/device.h"

#include <string>

namespace phalanx::kernels {

#ifdef PHALANX_WITH_CUDA
int cudaDeviceCountImpl();  // kernels/cuda/device_cuda.cu
bool builtWithCuda() { return true; }
int cudaDeviceCount() { return cudaDeviceCountImpl(); }
#else
bool builtWithCuda() { return false; }
int cudaDeviceCount() { return 0; }
#endif

std::string backendSummary() {
  if (!builtWithCuda()) return "cpu (built without CUDA)";
  const int n = cudaDeviceCount();
  return "cpu+cuda (" + std::to_string(n) + " device" + (n == 1 ? "" : "s") + " answering)";
}

}  // namespace phalanx::kernels
