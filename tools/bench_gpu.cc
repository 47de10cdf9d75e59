#include "tools/bench_gpu.h"

#ifdef PHALANX_WITH_CUDA

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "kernels/counter_rng.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/device.h"

namespace phalanx::tools {
namespace {

namespace cuda = kernels::cuda;

// n device rows of d floats (one allocation), deterministic noise; cached per shape.
struct DeviceRowSet {
  cuda::DeviceArray<float> data;
  cuda::DeviceArray<const float*> ptrs;
};

const DeviceRowSet& deviceRows(std::size_t n, std::size_t d) {
  static std::map<std::pair<std::size_t, std::size_t>, std::unique_ptr<DeviceRowSet>> cache;
  auto& slot = cache[{n, d}];
  if (!slot) {
    slot = std::make_unique<DeviceRowSet>();
    slot->data.resize(n * d);
    std::vector<float> row(d);
    std::vector<const float*> ptrs;
    for (std::size_t k = 0; k < n; ++k) {
      for (std::size_t i = 0; i < d; ++i) {
        std::uint32_t x = std::uint32_t(k * d + i) * 2654435761u + 12345u;
        x ^= x >> 15;
        row[i] = float(x & 0xffff) / 65536.0f - 0.5f;
      }
      cuda::copyToDevice(slot->data.data() + k * d, row.data(), d * sizeof(float));
      ptrs.push_back(slot->data.data() + k * d);
    }
    slot->ptrs.upload(ptrs.data(), n);
  }
  return *slot;
}

// Best of five reads of the set's n * d floats: the floor every ratio compares against.
double readFloorMs(const DeviceRowSet& set) {
  cuda::Timer timer;
  cuda::readFloor(set.data.data(), set.data.size());  // warm-up
  double best = 1e300;
  for (int rep = 0; rep < 5; ++rep) {
    timer.start();
    cuda::readFloor(set.data.data(), set.data.size());
    best = std::min(best, timer.stopMs());
  }
  return best;
}

// Times body() per iteration with CUDA events; reports the floor, the ratio to it, and the
// share of the floor's bandwidth the kernel reaches on the bytes it must read.
template <class Body>
void timeAgainstFloor(benchmark::State& state, const DeviceRowSet& set, Body body) {
  const double floor_ms = readFloorMs(set);
  cuda::Timer timer;
  body();  // warm-up: scratch allocations happen here, not in the timed loop
  double total = 0;
  for (auto _ : state) {
    timer.start();
    body();
    const double ms = timer.stopMs();
    state.SetIterationTime(ms / 1e3);
    total += ms;
  }
  const double per = total / double(std::max<benchmark::IterationCount>(state.iterations(), 1));
  const double bytes = double(set.data.size() * sizeof(float));
  state.counters["floor_ms"] = floor_ms;
  state.counters["ratio_to_floor"] = per / floor_ms;
  state.counters["share_of_read_bandwidth"] = floor_ms / per;
  state.counters["GB_per_s"] = bytes / (per / 1e3) / 1e9;
  state.counters["floor_GB_per_s"] = bytes / (floor_ms / 1e3) / 1e9;
}

// True (and the benchmark reported as skipped) when no device answers: nothing to allocate on.
bool skippedWithoutDevice(benchmark::State& state) {
  if (kernels::cudaDeviceCount() > 0) return false;
  state.SkipWithError("no CUDA device answers");
  for (auto _ : state) {
  }
  return true;
}

template <class... Args>
void registerGpu(const std::string& name, Args&&... args) {
  benchmark::RegisterBenchmark(name.c_str(), std::forward<Args>(args)...)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

void runTopk(benchmark::State& state, std::size_t d, double density) {
  if (skippedWithoutDevice(state)) return;
  const auto& set = deviceRows(1, d);
  const std::size_t k = std::max<std::size_t>(1, std::size_t(density * double(d)));
  cuda::TopkScratch scratch;
  cuda::DeviceArray<std::uint32_t> out(k);
  timeAgainstFloor(state, set,
                   [&] { cuda::topkIndices(set.data.data(), d, k, out.data(), scratch); });
  state.counters["k"] = double(k);
}

void runPairwise(benchmark::State& state, std::size_t n, std::size_t d) {
  if (skippedWithoutDevice(state)) return;
  const auto& set = deviceRows(n, d);
  cuda::DeviceArray<double> out(n * n);
  timeAgainstFloor(state, set,
                   [&] { cuda::pairwiseSquaredDistances(set.ptrs.data(), n, d, out.data()); });
}

void runDistancesAndSum(benchmark::State& state, std::size_t n, std::size_t d) {
  if (skippedWithoutDevice(state)) return;
  const auto& set = deviceRows(n, d);
  cuda::DeviceArray<double> out(n);
  cuda::DeviceArray<float> sum(d);
  timeAgainstFloor(state, set, [&] {
    cuda::squaredDistancesAndSum(set.data.data(), set.ptrs.data(), n, d, out.data(), sum.data());
  });
}

void runWeightedSum(benchmark::State& state, std::size_t n, std::size_t d) {
  if (skippedWithoutDevice(state)) return;
  const auto& set = deviceRows(n, d);
  std::vector<double> w(n, 1.0 / double(n));
  cuda::DeviceArray<double> weights;
  weights.upload(w.data(), n);
  cuda::DeviceArray<float> out(d);
  timeAgainstFloor(state, set,
                   [&] { cuda::weightedSum(set.ptrs.data(), weights.data(), n, d, out.data()); });
}

void runOrder(benchmark::State& state, std::size_t n, std::size_t d, bool median) {
  if (skippedWithoutDevice(state)) return;
  const auto& set = deviceRows(n, d);
  cuda::DeviceArray<float> out(d);
  timeAgainstFloor(state, set, [&] {
    if (median) {
      cuda::coordinateMedian(set.ptrs.data(), n, d, out.data());
    } else {
      cuda::coordinateTrimmedMean(set.ptrs.data(), n, d, n / 4, out.data());
    }
  });
}

void runPack(benchmark::State& state, std::size_t d, std::string codec) {
  if (skippedWithoutDevice(state)) return;
  const auto& set = deviceRows(1, d);
  cuda::DeviceArray<std::uint16_t> halves(d);
  cuda::DeviceArray<std::uint8_t> bytes((d + 7) / 8);
  cuda::DeviceArray<std::uint32_t> codes(d);
  cuda::DeviceArray<float> norms(d / 512 + 1);
  timeAgainstFloor(state, set, [&] {
    if (codec == "fp16") cuda::toHalf(set.data.data(), d, halves.data());
    if (codec == "bf16") cuda::toBfloat16(set.data.data(), d, halves.data());
    if (codec == "sign") cuda::packSigns(set.data.data(), d, bytes.data());
    if (codec == "qsgd8") {
      cuda::qsgdQuantize(set.data.data(), d, 512, 127, 8, kernels::CounterRng{1}, norms.data(),
                         codes.data());
    }
  });
}

}  // namespace

std::string registerGpuBenchmarks(bool quick) {
  const std::size_t d = quick ? 1 << 16 : 25'600'000;
  const std::vector<std::size_t> ns =
      quick ? std::vector<std::size_t>{8} : std::vector<std::size_t>{8, 32};
  for (const double density : {0.001, 0.01}) {
    registerGpu(fmt::format("gpu/topk/d:{}/density:{}", d, density), runTopk, d, density);
  }
  for (const std::size_t n : ns) {
    registerGpu(fmt::format("gpu/pairwise/n:{}/d:{}", n, d), runPairwise, n, d);
    registerGpu(fmt::format("gpu/distances_and_sum/n:{}/d:{}", n, d), runDistancesAndSum, n, d);
    registerGpu(fmt::format("gpu/weighted_sum/n:{}/d:{}", n, d), runWeightedSum, n, d);
    registerGpu(fmt::format("gpu/trimmed_mean/n:{}/d:{}", n, d), runOrder, n, d, false);
    registerGpu(fmt::format("gpu/median/n:{}/d:{}", n, d), runOrder, n, d, true);
  }
  for (const char* codec : {"fp16", "bf16", "sign", "qsgd8"}) {
    registerGpu(fmt::format("gpu/pack/{}/d:{}", codec, d), runPack, d, std::string(codec));
  }
  return "";
}

}  // namespace phalanx::tools

#else

namespace phalanx::tools {

std::string registerGpuBenchmarks(bool) {
  return "bench gpu: this phalanx was built without CUDA (CMake found no nvcc)";
}

}  // namespace phalanx::tools

#endif
