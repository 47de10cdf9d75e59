// Internal to compress/: the payload writers shared by the codecs, DGC and the layered
// message, and the two index choices both sides must reproduce (randk's seeded draw and
// DGC's sampled threshold). Layouts are in compress/FORMAT.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <vector>

#include "base/bytes.h"
#include "compress/bit_io.h"
#include "compress/encoded.h"
#include "kernels/counter_rng.h"

namespace phalanx::compress {
using base::ByteReader;
using base::ByteWriter;
}  // namespace phalanx::compress

namespace phalanx::compress::detail {

void writeHeader(ByteWriter& w, CodecId codec, std::uint32_t dim);

// Writes values scale·x[indices] as `type`. Error when one of them is not finite.
std::expected<void, std::string> writeValues(ByteWriter& w, std::span<const float> x,
                                             std::span<const std::uint32_t> indices, float scale,
                                             ValueType type);

// The sparse payload: varint k, value type, index coding (varint gaps or Golomb–Rice,
// whichever is smaller), then the values. indices strictly increasing, < x.size().
std::expected<void, std::string> writeSparse(ByteWriter& w, std::span<const float> x,
                                             std::span<const std::uint32_t> indices,
                                             ValueType type);

// A whole sparse message (header + payload) for codec id `codec` over x.
std::expected<void, std::string> encodeSparse(CodecId codec, std::span<const float> x,
                                              std::span<const std::uint32_t> indices,
                                              ValueType type, std::vector<std::uint8_t>& out);

// randk's k indices of [0, d), uniform without replacement (Floyd's algorithm over a
// bitmap), ascending; a pure function of (seed, d, k).
void randkIndices(std::uint64_t seed, std::size_t d, std::size_t k,
                  std::vector<std::uint32_t>& out);

// DGC's sampled top-k (ALGORITHMS.md §3.1 topk_sampled): about k indices, ascending.
void sampledTopk(std::span<const float> x, std::size_t k, kernels::CounterRng rng,
                 std::vector<std::uint32_t>& out);

// A layered message: header (kLayered, dim), varint segment count, then per segment a varint
// byte length and a whole message covering the next entries.
void beginLayered(ByteWriter& w, std::uint32_t dim, std::size_t segments);
void appendSegment(ByteWriter& w, std::span<const std::uint8_t> message);

}  // namespace phalanx::compress::detail
