// `phalanx bench gpu`: the CUDA kernels on device-resident buffers, each timed with CUDA
// events against a device-memory read floor measured in the same run.
#pragma once

#include <string>

namespace phalanx::tools {

// Registers the suite with Google Benchmark; "" when done, else why it cannot run (a build
// without CUDA). Without a device the benchmarks register and report a skip.
std::string registerGpuBenchmarks(bool quick);

}  // namespace phalanx::tools
