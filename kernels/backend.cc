#include "kernels/backend.h"

#include <atomic>
#include <stdexcept>

#include "kernels/device.h"

namespace phalanx::kernels {
namespace {

std::atomic<Backend> active{Backend::cpu};

}  // namespace

Backend useBackend(std::string_view choice) {
  Backend chosen;
  if (choice == "cpu") {
    chosen = Backend::cpu;
  } else if (choice == "cuda" || choice == "auto") {
    const bool answers = cudaDeviceCount() > 0;
    if (choice == "cuda" && !answers) {
      throw std::runtime_error(builtWithCuda()
                                   ? "device: cuda, but no CUDA device answers on this machine"
                                   : "device: cuda, but this phalanx was built without CUDA");
    }
    chosen = answers ? Backend::cuda : Backend::cpu;
  } else {
    throw std::invalid_argument("device: '" + std::string(choice) + "' is not auto, cpu or cuda");
  }
  active.store(chosen);
  return chosen;
}

Backend activeBackend() { return active.load(std::memory_order_relaxed); }

std::string backendName(Backend backend) { return backend == Backend::cuda ? "cuda" : "cpu"; }

}  // namespace phalanx::kernels
