// Counter-based random numbers for compressors: draw i of stream `key` is a pure function of
// (key, i), so parallel loops draw the same numbers in any schedule, on any thread count and
// on every machine (no std:: distributions, whose output is implementation-defined).
// A value type; safe to copy and use from any thread.
#pragma once

#include <cstdint>

namespace phalanx::kernels {

// splitmix64's finalizer (Steele, Lea, Flood 2014): a bijective 64-bit mix.
constexpr std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct CounterRng {
  std::uint64_t key = 0;

  // A stream derived from this one, e.g. per round: independent for practical purposes.
  constexpr CounterRng fork(std::uint64_t tag) const { return {mix64(key ^ mix64(~tag))}; }

  constexpr std::uint64_t bits(std::uint64_t i) const { return mix64(key ^ mix64(i)); }

  // Uniform in [0, 1) on a 2^-24 grid: exact in float, so comparisons are portable.
  constexpr float uniform(std::uint64_t i) const { return float(bits(i) >> 40) * 0x1p-24f; }

  // Uniform integer in [0, n), n >= 1 (Lemire's multiply-shift; bias <= n / 2^64).
  constexpr std::uint64_t below(std::uint64_t i, std::uint64_t n) const {
    return std::uint64_t((static_cast<unsigned __int128>(bits(i)) * n) >> 64);
  }
};

}  // namespace phalanx::kernels
