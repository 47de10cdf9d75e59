// Host-facing wrappers that run a CPU entry point's work on the CUDA backend: upload the
// inputs into reused device buffers, run kernels/cuda/, download the result. One call at a
// time (a mutex); the same contracts as the CPU functions they stand in for. Built only with
// CUDA; reached through PHALANX_OFFLOAD (backend.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/counter_rng.h"

namespace phalanx::kernels::offload {

using Rows = std::span<const std::span<const float>>;

void topkIndices(std::span<const float> x, std::size_t k, std::vector<std::uint32_t>& out);
bool toHalf(std::span<const float> in, std::span<std::uint16_t> out);
bool toBfloat16(std::span<const float> in, std::span<std::uint16_t> out);
void packSigns(std::span<const float> x, std::span<std::uint8_t> out);
bool qsgdQuantize(std::span<const float> x, std::size_t bucket, unsigned levels, unsigned width,
                  CounterRng rng, std::span<float> norms, std::span<std::uint32_t> codes);

void squaredDistancesTo(std::span<const float> center, Rows rows, std::span<double> out);
double squaredDistancesAndSum(std::span<const float> center, Rows rows, std::span<double> out,
                              std::span<float> sum);
void pairwiseSquaredDistances(Rows rows, std::span<double> out);
void weightedSum(Rows rows, std::span<const double> weights, std::span<float> out);
bool accumulateThenScale(Rows rows, std::span<const double> weights, double scale,
                         std::span<float> z);
void coordinateTrimmedMean(Rows rows, std::size_t trim, std::span<float> out);
void coordinateMedian(Rows rows, std::span<float> out);

// Whether a row set fits the device's order-statistic and pairwise kernels (n <= 64).
bool fitsRowKernels(std::size_t n);

}  // namespace phalanx::kernels::offload
