// Decoding of any compressed message (compress/FORMAT.md), stateless: the codec id and
// everything needed travel in the message. Every length, index, level and value is checked
// against the receiver's expected length before anything is written or any size from the
// message is allocated. Pure; safe from any thread on disjoint outputs.
#pragma once

#include <cstdint>
#include <expected>
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

}  // namespace phalanx::compress
