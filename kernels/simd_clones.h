// PHALANX_SIMD_CLONES: a hot loop compiled for AVX-512, AVX2 and baseline x86-64, the copy
// picked at run time (GCC's target_clones; nothing under clang or off x86-64).
#pragma once

// The build targets baseline x86-64 (SSE2), where these loops are compute-bound at memory
// speed; they are also compiled for AVX2 and AVX-512 and picked at run time.
#if defined(__x86_64__) && !defined(__clang__)
#define PHALANX_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PHALANX_SIMD_CLONES
#endif
