#include "kernels/backend.h"

#include <atomic>
#include <stdexcept>
#include <string>

#include "kernels/device.h"

namespace phalanx::kernels {
namespace {

std::atomic<Backend> active{Backend::kCpu};

}  // namespace

Backend useBackend(Device choice) {
  Backend chosen;
  if (choice == Device::kCpu) {
    chosen = Backend::kCpu;
  } else if (choice == Device::kCuda || choice == Device::kAuto) {
    const bool answers = cudaDeviceCount() > 0;
    if (choice == Device::kCuda && !answers) {
      throw std::runtime_error(builtWithCuda()
                                   ? "device: cuda, but no CUDA device answers on this machine"
                                   : "device: cuda, but this phalanx was built without CUDA");
    }
    chosen = answers ? Backend::kCuda : Backend::kCpu;
  } else {
    throw std::invalid_argument("device: " + std::to_string(int(choice)) +
                                " is not auto, cpu or cuda");
  }
  active.store(chosen);
  return chosen;
}

Backend activeBackend() { return active.load(std::memory_order_relaxed); }

}  // namespace phalanx::kernels
