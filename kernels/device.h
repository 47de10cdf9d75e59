// Which compute backends this build and this machine offer. Thread-safe.
#pragma once

#include <string>

namespace phalanx::kernels {

// True when this binary was built with the CUDA backend (PHALANX_WITH_CUDA).
bool builtWithCuda();

// Number of CUDA devices that answer; 0 when built without CUDA or when no driver/device.
int cudaDeviceCount();

// One line for logs and --version: "cpu" or "cpu+cuda (N devices)".
std::string backendSummary();

}  // namespace phalanx::kernels
