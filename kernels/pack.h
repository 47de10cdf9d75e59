// Packing hot loops for the wire: float to fp16/bf16 and back, bit-packed signs and
// fixed-width codes, little-endian and LSB-first so every machine writes the same bytes.
// Pure functions over caller-owned spans; safe from any thread on disjoint outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace phalanx::kernels {

// IEEE binary16 with round-to-nearest-even; finite inputs beyond ±65504 saturate to ±65504
// so a finite vector stays finite on the wire. Returns false when an input is NaN or ±Inf.
bool toHalf(std::span<const float> in, std::span<std::uint16_t> out);
void fromHalf(std::span<const std::uint16_t> in, std::span<float> out);

// bfloat16 (the top half of a float) with round-to-nearest-even; saturates like toHalf.
bool toBfloat16(std::span<const float> in, std::span<std::uint16_t> out);
void fromBfloat16(std::span<const std::uint16_t> in, std::span<float> out);

// Bytes needed for n codes of `width` bits.
constexpr std::size_t packedBytes(std::size_t n, unsigned width) { return (n * width + 7) / 8; }

// Bit j of the output (bit j % 8 of byte j / 8) is 1 when x[j] < 0; padding bits are 0.
void packSigns(std::span<const float> x, std::span<std::uint8_t> out);

// codes[j] (< 2^width, width in 1..24) at bits [j*width, (j+1)*width), LSB first; padding 0.
void packBits(std::span<const std::uint32_t> codes, unsigned width, std::span<std::uint8_t> out);
void unpackBits(std::span<const std::uint8_t> in, unsigned width, std::span<std::uint32_t> codes);

}  // namespace phalanx::kernels
