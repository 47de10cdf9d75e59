#include "kernels/dense_product.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/check.h"

// Built with -ffp-contract=off (kernels/CMakeLists.txt): a multiply fused into its add would
// round once where Eigen's SSE kernel rounds twice.

namespace phalanx::kernels {
namespace {

template <int L>
struct Lanes {
  // typedef, not using: GCC drops a vector attribute on an alias template's declaration.
  typedef float F __attribute__((vector_size(4 * L)));
  typedef float Fu __attribute__((vector_size(4 * L), aligned(4)));  // at any float address
  typedef std::int32_t M __attribute__((vector_size(4 * L)));
  typedef std::int32_t Mu __attribute__((vector_size(4 * L), aligned(4)));
};

constexpr std::size_t kSamples = 4;  // Eigen's nr: outputs come four samples at a time

// Four samples (x: their rows) by R vectors of outputs from v0 (wt: wᵀ, k × mp), over the depth
// block [k0, k1); out = 0 + the block's sum on the first block, out + it after. With `Split`
// (R = 1), the lanes `split` marks take Eigen's one-packet order: in the block's first multiple
// of eight steps the even ones in one sum and the odd ones in another, joined, then the rest.
template <int L, int R, bool Split>
__attribute__((always_inline)) inline void tile(const float* x, std::size_t k, const float* wt,
                                                std::size_t mp, std::size_t v0, std::size_t k0,
                                                std::size_t k1, const std::int32_t* split,
                                                float* out, std::size_t m, bool first) {
  using F = typename Lanes<L>::F;
  using Fu = typename Lanes<L>::Fu;
  using M = typename Lanes<L>::M;
  using Mu = typename Lanes<L>::Mu;
  F c[R][kSamples] = {};
  const float* wp = wt + v0 * L;
  if constexpr (!Split) {
    for (std::size_t kk = k0; kk < k1; ++kk) {
      F w[R];
      for (int r = 0; r < R; ++r) w[r] = *reinterpret_cast<const Fu*>(wp + kk * mp + r * L);
      for (std::size_t s = 0; s < kSamples; ++s) {
        const float xs = x[s * k + kk];
        for (int r = 0; r < R; ++r) {
          const F p = xs * w[r];
          c[r][s] = c[r][s] + p;
        }
      }
    }
  } else {
    static_assert(R == 1, "the one-packet order runs one vector at a time");
    F even[kSamples] = {}, odd[kSamples] = {};
    const std::size_t peeled = k0 + ((k1 - k0) & ~std::size_t{7});
    std::size_t kk = k0;
    for (; kk < peeled; kk += 2) {
      const F w0 = *reinterpret_cast<const Fu*>(wp + kk * mp);
      const F w1 = *reinterpret_cast<const Fu*>(wp + (kk + 1) * mp);
      for (std::size_t s = 0; s < kSamples; ++s) {
        const F p0 = x[s * k + kk] * w0;
        c[0][s] = c[0][s] + p0;
        even[s] = even[s] + p0;
        const F p1 = x[s * k + kk + 1] * w1;
        c[0][s] = c[0][s] + p1;
        odd[s] = odd[s] + p1;
      }
    }
    for (std::size_t s = 0; s < kSamples; ++s) even[s] = even[s] + odd[s];
    for (; kk < k1; ++kk) {
      const F w0 = *reinterpret_cast<const Fu*>(wp + kk * mp);
      for (std::size_t s = 0; s < kSamples; ++s) {
        const F p = x[s * k + kk] * w0;
        c[0][s] = c[0][s] + p;
        even[s] = even[s] + p;
      }
    }
    const M take = *reinterpret_cast<const Mu*>(split + v0 * L);
    for (std::size_t s = 0; s < kSamples; ++s)
      c[0][s] = F((M(even[s]) & take) | (M(c[0][s]) & ~take));
  }
  for (std::size_t s = 0; s < kSamples; ++s) {
    float* o = out + s * m + v0 * L;
    for (int r = 0; r < R; ++r) {
      const std::size_t at = (v0 + std::size_t(r)) * L;
      if (at + L <= m) {
        const F before = first ? F{} : F(*reinterpret_cast<const Fu*>(o + r * L));
        *reinterpret_cast<Fu*>(o + r * L) = before + c[r][s];
      } else {
        for (std::size_t l = 0; at + l < m; ++l)
          o[r * L + l] = (first ? 0.0f : o[r * L + l]) + c[r][s][l];
      }
    }
  }
}

template <int L, int R>
__attribute__((always_inline)) inline void product(const float* x, const float* w, std::size_t n,
                                                   std::size_t k, std::size_t m, float* out,
                                                   std::size_t kc, std::size_t mc) {
  const std::size_t vectors = (m + L - 1) / L, mp = vectors * L;
  // wᵀ, padded to whole vectors: the outputs of one depth step side by side.
  thread_local std::vector<float> wt;
  wt.assign(k * mp, 0.0f);
  for (std::size_t j = 0; j < m; ++j)
    for (std::size_t d = 0; d < k; ++d) wt[d * mp + j] = w[j * k + d];
  // Eigen takes the rows of wᵀ's product (the outputs) mc at a time, eight at a time inside,
  // and a last four with its one-packet kernel.
  std::vector<std::int32_t> split(mp, 0);
  std::vector<char> has_split(vectors, 0);
  for (std::size_t j0 = 0; j0 < m; j0 += mc) {
    const std::size_t rows = std::min(mc, m - j0);
    if (rows % 8 != 4) continue;
    for (std::size_t j = j0 + rows - 4; j < j0 + rows; ++j) {
      split[j] = -1;
      has_split[j / L] = 1;
    }
  }
  for (std::size_t i0 = 0; i0 < n; i0 += kSamples) {
    const float* xs = x + i0 * k;
    float* os = out + i0 * m;
    for (std::size_t k0 = 0; k0 < k; k0 += kc) {
      const std::size_t k1 = std::min(k, k0 + kc);
      const bool first = k0 == 0;
      for (std::size_t v = 0; v < vectors;) {
        if (has_split[v]) {
          tile<L, 1, true>(xs, k, wt.data(), mp, v, k0, k1, split.data(), os, m, first);
          ++v;
          continue;
        }
        std::size_t plain = 0;
        while (v + plain < vectors && plain < std::size_t(R) && !has_split[v + plain]) ++plain;
        if (plain == std::size_t(R)) {
          tile<L, R, false>(xs, k, wt.data(), mp, v, k0, k1, split.data(), os, m, first);
        } else {
          for (std::size_t r = 0; r < plain; ++r)
            tile<L, 1, false>(xs, k, wt.data(), mp, v + r, k0, k1, split.data(), os, m, first);
        }
        v += plain;
      }
    }
  }
}

__attribute__((target("avx512f"))) void product512(const float* x, const float* w, std::size_t n,
                                                   std::size_t k, std::size_t m, float* out,
                                                   std::size_t kc, std::size_t mc) {
  product<16, 4>(x, w, n, k, m, out, kc, mc);
}

__attribute__((target("avx2"))) void product256(const float* x, const float* w, std::size_t n,
                                                std::size_t k, std::size_t m, float* out,
                                                std::size_t kc, std::size_t mc) {
  product<8, 2>(x, w, n, k, m, out, kc, mc);
}

}  // namespace

bool detail::productInEigenOrder(std::span<const float> x, std::span<const float> w, std::size_t n,
                                 std::size_t k, std::size_t m, std::span<float> out) {
  PHALANX_CHECK(x.size() == n * k && w.size() == m * k && out.size() == n * m,
                "productLikeEigen: shapes");
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // Eigen runs small products coefficient by coefficient and a single row or column as a
  // matrix-vector product, each in an order of its own; a thread pool splits the blocks.
  if (n == 0 || m == 0 || k == 0 || n % kSamples != 0 || m % 4 != 0 || n + m + k < 20 ||
      Eigen::nbThreads() != 1) {
    return false;
  }
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !__builtin_cpu_supports("avx2")) return false;
  // The blocking Eigen's product of a row-major result computes (the depth's kc, the rows' mc).
  Eigen::internal::gemm_blocking_space<Eigen::RowMajor, float, float, Eigen::Dynamic,
                                       Eigen::Dynamic, Eigen::Dynamic, 1, false>
      blocking(Eigen::Index(n), Eigen::Index(m), Eigen::Index(k), 1, true);
  const auto kc = std::size_t(blocking.kc()), mc = std::size_t(blocking.mc());
  if (kc == 0 || mc == 0) return false;
  (avx512 ? product512 : product256)(x.data(), w.data(), n, k, m, out.data(), kc, mc);
  return true;
#else
  static_cast<void>(x), static_cast<void>(w), static_cast<void>(n), static_cast<void>(k),
      static_cast<void>(m), static_cast<void>(out);
  return false;
#endif
}

}  // namespace phalanx::kernels
