// Decoding of any compressed message (compress/FORMAT.md), stateless: the codec id and
// everything needed travel in the message. Every length, index, level and value is checked
// against the receiver's expected length before anything is written or any size from the
// message is allocated. Pure; safe from any thread on disjoint outputs.
#pragma once

#include <atomic>
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>

#include "compress/encoded.h"

namespace phalanx::compress {

// out = decoded message; out.size() must equal the message's dense length. On error (one
// line saying what is wrong) out is untouched.
std::expected<void, std::string> decode(std::span<const std::uint8_t> bytes, std::span<float> out);

// out += alpha · decoded message, touching only what the message carries (O(k) for sparse
// codecs): how replicas and error-feedback states take a delta. On error out is untouched.
std::expected<void, std::string> decodeAdd(std::span<const std::uint8_t> bytes, float alpha,
                                           std::span<float> out);

// An uncompressed (fp32) message's `dim` values read in place, when it passes every check
// decode() makes and its values are aligned for float: what decode() would write, without the
// copy. nullopt otherwise — decode it instead, which says why it fails. The view lives as long
// as `bytes`; the values are read through a float pointer into the byte buffer, as every
// zero-copy reader of a wire format does (GCC and Clang let byte stores alias float loads).
// `finite_memo` (optional): the verdict on the values' finiteness for these very bytes, shared
// by every reader of one immutable buffer (-1: not known yet; the first reader stores it).
std::optional<std::span<const float>> viewDense(std::span<const std::uint8_t> bytes,
                                                std::size_t dim,
                                                std::atomic<std::int8_t>* finite_memo = nullptr);

}  // namespace phalanx::compress
