#include "kernels/row_dots.h"

#include <algorithm>
#include <iterator>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PHALANX_ROW_DOTS_AVX512 1
#endif

// Why the vector version adds exactly what the scalar one does: a float times a float is exact
// in double (24 + 24 bits of mantissa), so a fused multiply-add rounds once, as the scalar add
// after an exact multiply does, and each lane is one row's chain, from coordinate 0 up.

namespace phalanx::kernels::detail {
namespace {

// G groups of eight rows in G independent chains of eight sums.
template <std::size_t G>
void scalarDots(const float* const* r, const float* y, std::size_t d, double* out) {
  constexpr std::size_t kRows = 8 * G;
  double s[kRows];
  const double y0 = y[0];
  for (std::size_t g = 0; g < kRows; ++g) s[g] = double(r[g][0]) * y0;
  for (std::size_t i = 1; i < d; ++i) {
    const double yi = y[i];
    for (std::size_t g = 0; g < kRows; ++g) s[g] += double(r[g][i]) * yi;
  }
  std::copy(std::begin(s), std::end(s), out);
}

#ifdef PHALANX_ROW_DOTS_AVX512
// Coordinate i of eight rows as the eight lanes of one vector, widened to double.
__attribute__((target("avx512f"))) inline __m512d column(const float* const* r, std::size_t i) {
  return _mm512_setr_pd(r[0][i], r[1][i], r[2][i], r[3][i], r[4][i], r[5][i], r[6][i], r[7][i]);
}

// Eight floats as doubles (the zero-masked form: GCC 12 warns that _mm512_cvtps_pd's
// undefined pass-through may be used uninitialized).
__attribute__((target("avx512f"))) inline __m512d widened(__m256 x) {
  return _mm512_maskz_cvtps_pd(__mmask8(0xFF), x);
}

// Eight rows' coordinates [i, i + 8) transposed: c[j] holds coordinate i + j of rows 0..7.
__attribute__((target("avx512f"))) inline void transposed(const float* const* r, std::size_t i,
                                                          __m256* c) {
  const __m256 v0 = _mm256_loadu_ps(r[0] + i), v1 = _mm256_loadu_ps(r[1] + i);
  const __m256 v2 = _mm256_loadu_ps(r[2] + i), v3 = _mm256_loadu_ps(r[3] + i);
  const __m256 v4 = _mm256_loadu_ps(r[4] + i), v5 = _mm256_loadu_ps(r[5] + i);
  const __m256 v6 = _mm256_loadu_ps(r[6] + i), v7 = _mm256_loadu_ps(r[7] + i);
  const __m256 t0 = _mm256_unpacklo_ps(v0, v1), t1 = _mm256_unpackhi_ps(v0, v1);
  const __m256 t2 = _mm256_unpacklo_ps(v2, v3), t3 = _mm256_unpackhi_ps(v2, v3);
  const __m256 t4 = _mm256_unpacklo_ps(v4, v5), t5 = _mm256_unpackhi_ps(v4, v5);
  const __m256 t6 = _mm256_unpacklo_ps(v6, v7), t7 = _mm256_unpackhi_ps(v6, v7);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  c[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  c[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  c[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  c[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  c[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  c[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  c[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  c[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// G groups interleave G independent chains (16 rows stream through the cache once where two
// calls of eight would take two passes over y). The multiply-add rounds once, as the scalar
// add of an exact product does.
template <std::size_t G>
__attribute__((target("avx512f"))) void vectorDots(const float* const* r, const float* y,
                                                   std::size_t d, double* out) {
  __m512d s[G];
  const __m512d y0 = _mm512_set1_pd(y[0]);
  for (std::size_t g = 0; g < G; ++g) s[g] = _mm512_mul_pd(column(r + 8 * g, 0), y0);
  std::size_t i = 1;
  for (; i + 8 <= d; i += 8) {
    __m256 c[G][8];
    for (std::size_t g = 0; g < G; ++g) transposed(r + 8 * g, i, c[g]);
    for (std::size_t j = 0; j < 8; ++j) {
      const __m512d yj = _mm512_set1_pd(y[i + j]);
      for (std::size_t g = 0; g < G; ++g) {
        s[g] = _mm512_fmadd_pd(widened(c[g][j]), yj, s[g]);
      }
    }
  }
  for (; i < d; ++i) {
    const __m512d yi = _mm512_set1_pd(y[i]);
    for (std::size_t g = 0; g < G; ++g) s[g] = _mm512_fmadd_pd(column(r + 8 * g, i), yi, s[g]);
  }
  for (std::size_t g = 0; g < G; ++g) _mm512_storeu_pd(out + 8 * g, s[g]);
}
#endif

template <std::size_t G>
void dotsOf(const float* const* r, const float* y, std::size_t d, double* out) {
  if (d == 0) {
    std::fill(out, out + 8 * G, 0.0);
    return;
  }
#ifdef PHALANX_ROW_DOTS_AVX512
  if (__builtin_cpu_supports("avx512f")) return vectorDots<G>(r, y, d, out);
#endif
  scalarDots<G>(r, y, d, out);
}

}  // namespace

void eightDots(const float* const* r, const float* y, std::size_t d, double* out) {
  dotsOf<1>(r, y, d, out);
}

void sixteenDots(const float* const* r, const float* y, std::size_t d, double* out) {
  dotsOf<2>(r, y, d, out);
}

}  // namespace phalanx::kernels::detail
