// Which backend runs kernels/'s hot loops in this process: chosen once at start-up from the
// config's `device: auto|cpu|cuda`; the CPU entry points then hand large inputs to CUDA.
// Thread-safe (the choice is an atomic; CUDA calls are serialized in cuda_offload.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/names.h"

namespace phalanx::kernels {

enum class Backend : std::uint8_t { kCpu, kCuda };
inline constexpr auto kBackends =
    base::nameTable<Backend>({{Backend::kCpu, "cpu"}, {Backend::kCuda, "cuda"}});
// What a config asks for: a backend, or the best one that answers.
enum class Device : std::uint8_t { kAuto, kCpu, kCuda };
inline constexpr auto kDevices = base::nameTable<Device>(
    {{Device::kAuto, "auto"}, {Device::kCpu, "cpu"}, {Device::kCuda, "cuda"}});

// kCpu; kCuda (throws std::runtime_error when this build or machine has no CUDA device);
// kAuto: cuda when a device answers, cpu otherwise. Returns what is now in use.
Backend useBackend(Device choice);
Backend activeBackend();

// Inputs smaller than this many floats stay on the CPU: a launch and a copy cost more.
constexpr std::size_t kOffloadMinEntries = std::size_t(1) << 16;

inline bool offloading(std::size_t entries) {
  return activeBackend() == Backend::kCuda && entries >= kOffloadMinEntries;
}

}  // namespace phalanx::kernels

// In a CPU entry point: `PHALANX_OFFLOAD(work, call)` returns call's result when the CUDA
// backend is active and the input is large enough; without CUDA in the build it is nothing.
#ifdef PHALANX_WITH_CUDA
#include "kernels/cuda_offload.h"
#define PHALANX_OFFLOAD(entries, call) \
  if (::phalanx::kernels::offloading(entries)) return call
#else
#define PHALANX_OFFLOAD(entries, call) static_cast<void>(0)
#endif
