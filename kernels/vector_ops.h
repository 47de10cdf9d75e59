// Dense float vector primitives (axpy, scaling, norms, distances) on flat parameter vectors.
// Pure functions over caller-owned spans; safe to call from any thread on disjoint outputs.
// Sums accumulate in double so results do not depend on vector length's rounding drift.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace phalanx::kernels {

// y += a * x. Sizes must match (checked).
void axpy(float a, std::span<const float> x, std::span<float> y);

// y = a * x + b * y. Sizes must match (checked).
void axpby(float a, std::span<const float> x, float b, std::span<float> y);

// x *= a.
void scale(float a, std::span<float> x);

// Σ x_j y_j.
double dot(std::span<const float> x, std::span<const float> y);

// ‖x‖².
double squaredNorm(std::span<const float> x);

// ‖x - y‖².
double squaredDistance(std::span<const float> x, std::span<const float> y);

// True when every element is finite (no NaN, no ±Inf).
bool allFinite(std::span<const float> x);

// The same test on little-endian values as they come off the wire, before they are copied:
// 32-bit words are float32; 16-bit words are fp16 (exponent mask 0x7c00) or bf16 (0x7f80).
// A value is non-finite exactly when every bit of its exponent field is set. A trailing
// partial word is ignored (callers have checked the length).
bool allFiniteFloat32Bytes(std::span<const std::uint8_t> bytes);
bool allFinite16BitBytes(std::span<const std::uint8_t> bytes, std::uint16_t exponent_mask);

}  // namespace phalanx::kernels
