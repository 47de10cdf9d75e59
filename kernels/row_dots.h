// Dot products of many rows with one vector, each row's sum in dot()'s order (exact products in
// double added from coordinate 0 up) but several rows at once: the robust rules' principal trim
// takes such dots against every row dozens of times per mix, inside the attacks' searches.
#pragma once

#include <cstddef>

namespace phalanx::kernels::detail {

// out[g] = Σ_i double(r[g][i]) · double(y[i]) for g < 8, each sum from i = 0 up, one rounding
// per addition: bit for bit what a scalar loop over one row gives. On AVX-512 the eight sums
// are the lanes of one vector (the rows' blocks transposed), and 16 rows run as two vectors.
void eightDots(const float* const* r, const float* y, std::size_t d, double* out);
// The same for 16 rows (r[0..15], out[0..15]).
void sixteenDots(const float* const* r, const float* y, std::size_t d, double* out);

}  // namespace phalanx::kernels::detail
