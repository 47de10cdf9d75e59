// Squared distances of up to eight rows to one vector over one run of coordinates, each row's
// float sum in one fixed order: the pairwise distance matrix measures a row against many.
#pragma once

#include <cstddef>

namespace phalanx::kernels::detail {

// Whether runDistances below takes its AVX-512 path on this machine (the run-time check the
// kernels' avx512f clones are picked by).
bool vectorRunDistances();

// On the AVX-512 path, out[g] = Σ_i (a[g][i] − c[i])² in float for g < count (count ≤ 8), each
// row's sum in sixteen lanes (lane l takes coordinates l, l + 16, … below the last multiple of
// 16, one fused multiply-add each), the rest added to lane 0 in order, then the lanes summed
// from 0 up: what GCC makes of batch_ops's one-row loop for AVX-512, spelled out so that one
// row and eight agree bit for bit. The rows share each load of c, and their chains run side
// by side instead of one add latency after another. Only call it when vectorRunDistances().
void runDistances(const float* const* a, std::size_t count, const float* c, std::size_t n,
                  float* out);

}  // namespace phalanx::kernels::detail
