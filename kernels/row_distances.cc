#include "kernels/row_distances.h"

#include <cmath>

#include "base/check.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PHALANX_ROW_DISTANCES_AVX512 1
#endif

namespace phalanx::kernels::detail {

#ifdef PHALANX_ROW_DISTANCES_AVX512
namespace {

template <std::size_t G>
__attribute__((target("avx512f"))) void vectorDistances(const float* const* a, const float* c,
                                                        std::size_t n, float* out) {
  __m512 acc[G];
  for (std::size_t g = 0; g < G; ++g) acc[g] = _mm512_setzero_ps();
  const std::size_t whole = n / 16 * 16;
  for (std::size_t i = 0; i < whole; i += 16) {
    const __m512 ci = _mm512_loadu_ps(c + i);
    for (std::size_t g = 0; g < G; ++g) {
      const __m512 t = _mm512_sub_ps(_mm512_loadu_ps(a[g] + i), ci);
      acc[g] = _mm512_fmadd_ps(t, t, acc[g]);
    }
  }
  for (std::size_t g = 0; g < G; ++g) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc[g]);
    for (std::size_t i = whole; i < n; ++i) {
      const float t = a[g][i] - c[i];
      lanes[0] = std::fma(t, t, lanes[0]);
    }
    float s = 0.0f;
    for (const float lane : lanes) s += lane;
    out[g] = s;
  }
}

}  // namespace
#endif

bool vectorRunDistances() {
#ifdef PHALANX_ROW_DISTANCES_AVX512
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
#else
  return false;
#endif
}

void runDistances(const float* const* a, std::size_t count, const float* c, std::size_t n,
                  float* out) {
  PHALANX_CHECK(vectorRunDistances() && count >= 1 && count <= 8,
                "runDistances: one to eight rows, on the AVX-512 path");
#ifdef PHALANX_ROW_DISTANCES_AVX512
  using Kernel = void (*)(const float* const*, const float*, std::size_t, float*);
  static constexpr Kernel kByCount[] = {vectorDistances<1>, vectorDistances<2>, vectorDistances<3>,
                                        vectorDistances<4>, vectorDistances<5>, vectorDistances<6>,
                                        vectorDistances<7>, vectorDistances<8>};
  kByCount[count - 1](a, c, n, out);
#else
  static_cast<void>(a), static_cast<void>(c), static_cast<void>(n), static_cast<void>(out);
#endif
}

}  // namespace phalanx::kernels::detail
