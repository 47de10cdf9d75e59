// A dense layer's product out = x · wᵀ computed bit for bit as Eigen 3.4's SSE product computes
// it, on AVX2 or AVX-512 vectors: evaluation runs every honest peer's model over the test set,
// and Eigen's 4-wide kernel made that a sixth of a large simulation's time, while a different
// order of additions would change every recorded result.
#pragma once

#include <Eigen/Core>
#include <cstddef>
#include <span>

namespace phalanx::kernels {

// Whether the Eigen this translation unit sees sums a float product in the order
// productLikeEigen reproduces: 3.4.0 on SSE2 without FMA or AVX (the build's default flags; a
// build with -march=native vectorizes Eigen wider, and the caller then runs Eigen itself).
inline constexpr bool kEigenOrderKnown =
#if EIGEN_WORLD_VERSION == 3 && EIGEN_MAJOR_VERSION == 4 && EIGEN_MINOR_VERSION == 0 && \
    defined(EIGEN_VECTORIZE_SSE2) && !defined(EIGEN_VECTORIZE_AVX) &&                   \
    !defined(EIGEN_VECTORIZE_FMA)
    true;
#else
    false;
#endif

// out (n × m, row-major) = x (n × k, row-major) · wᵀ (w: m × k, row-major, as nn.Linear keeps
// it), each element summed as `out.noalias() = X * W.transpose()` sums it in Eigen 3.4 on SSE2
// with one thread: over the depth in Eigen's cache blocks (kc), inside a block one running sum,
// except the last four outputs of a block of rows that is four more than a multiple of eight
// (Eigen's one-packet kernel: even and odd steps in two sums, joined before the block's tail).
// false, and `out` untouched: a shape, a CPU or an Eigen setting this does not reproduce (n or
// m not a multiple of 4, a product Eigen runs without its blocked kernel, no AVX2, Eigen on more
// than one thread) — the caller runs Eigen.
namespace detail {
// The kernel behind productLikeEigen, without the check of the caller's Eigen: call that.
bool productInEigenOrder(std::span<const float> x, std::span<const float> w, std::size_t n,
                         std::size_t k, std::size_t m, std::span<float> out);
}  // namespace detail
inline bool productLikeEigen(std::span<const float> x, std::span<const float> w, std::size_t n,
                             std::size_t k, std::size_t m, std::span<float> out) {
  return kEigenOrderKnown && detail::productInEigenOrder(x, w, n, k, m, out);
}

}  // namespace phalanx::kernels
