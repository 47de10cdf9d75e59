// Helpers for tests over sets of vectors: owned rows and span views of them.
#pragma once

#include <random>
#include <span>
#include <vector>

namespace phalanx::testing {

using Matrix = std::vector<std::vector<float>>;

inline std::vector<std::span<const float>> views(const Matrix& m) { return {m.begin(), m.end()}; }

// n rows of d values ~ center + N(0, scale^2), from `seed`.
inline Matrix gaussianRows(std::size_t n, std::size_t d, float scale, std::uint64_t seed,
                           float center = 0.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(center, scale);
  Matrix m(n, std::vector<float>(d));
  for (auto& row : m) {
    for (float& v : row) v = g(rng);
  }
  return m;
}

}  // namespace phalanx::testing
