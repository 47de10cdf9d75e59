#include "kernels/vector_ops.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"

namespace phalanx::kernels {
namespace {

using ConstVec = Eigen::Map<const Eigen::ArrayXf>;
using Vec = Eigen::Map<Eigen::ArrayXf>;

ConstVec view(std::span<const float> x) { return ConstVec(x.data(), Eigen::Index(x.size())); }
Vec view(std::span<float> x) { return Vec(x.data(), Eigen::Index(x.size())); }

// Whether any of the n words at p has every bit of `mask` set. `omp simd` makes GCC vectorize
// the loop at -O2 (its default cost model leaves this scalar: it was 10% of a 26-peer round).
template <class Word>
bool anyWordHasMask(const std::uint8_t* p, std::size_t n, Word mask) {
  Word hit = 0;
#pragma omp simd reduction(| : hit)
  for (std::size_t j = 0; j < n; ++j) {
    Word w;
    std::memcpy(&w, p + j * sizeof(Word), sizeof(Word));
    hit |= Word((w & mask) == mask);
  }
  return hit != 0;
}

// Scans in chunks so that a non-finite value near the front ends the scan early.
template <class Word>
bool noWordHasMask(std::span<const std::uint8_t> bytes, Word mask) {
  constexpr std::size_t kChunk = 4096;
  const std::size_t n = bytes.size() / sizeof(Word);
  for (std::size_t at = 0; at < n; at += kChunk) {
    if (anyWordHasMask(bytes.data() + at * sizeof(Word), std::min(kChunk, n - at), mask)) {
      return false;
    }
  }
  return true;
}

}  // namespace

void axpy(float a, std::span<const float> x, std::span<float> y) {
  PHALANX_CHECK(x.size() == y.size(), "axpy: size mismatch");
  view(y) += a * view(x);
}

void axpby(float a, std::span<const float> x, float b, std::span<float> y) {
  PHALANX_CHECK(x.size() == y.size(), "axpby: size mismatch");
  view(y) = a * view(x) + b * view(y);
}

void scale(float a, std::span<float> x) { view(x) *= a; }

double dot(std::span<const float> x, std::span<const float> y) {
  PHALANX_CHECK(x.size() == y.size(), "dot: size mismatch");
  return (view(x).cast<double>() * view(y).cast<double>()).sum();
}

double squaredNorm(std::span<const float> x) { return view(x).cast<double>().square().sum(); }

double squaredDistance(std::span<const float> x, std::span<const float> y) {
  PHALANX_CHECK(x.size() == y.size(), "squaredDistance: size mismatch");
  return (view(x).cast<double>() - view(y).cast<double>()).square().sum();
}

bool allFinite(std::span<const float> x) {
  return allFiniteFloat32Bytes(
      {reinterpret_cast<const std::uint8_t*>(x.data()), x.size() * sizeof(float)});
}

bool allFiniteFloat32Bytes(std::span<const std::uint8_t> bytes) {
  return noWordHasMask<std::uint32_t>(bytes, 0x7f800000u);
}

bool allFinite16BitBytes(std::span<const std::uint8_t> bytes, std::uint16_t exponent_mask) {
  return noWordHasMask<std::uint16_t>(bytes, exponent_mask);
}

}  // namespace phalanx::kernels
