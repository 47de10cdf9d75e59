// A compressed message as it travels: the 8-byte header of compress/FORMAT.md (format
// version, codec id, dense length) and the codec's payload. A plain value owned by whoever
// holds it; the bytes are the same on every machine for the same input and seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/names.h"

namespace phalanx::compress {

// Wire ids; never renumber (FORMAT.md).
enum class CodecId : std::uint8_t {
  kNone = 0,
  kFp16 = 1,
  kBf16 = 2,
  kTopk = 3,
  kTopkSampled = 4,
  kThreshold = 5,
  kRandk = 6,
  kQsgd = 7,
  kSign = 8,
  kTerngrad = 9,
  kNatural = 10,
  kPowersgd = 11,
  kLayered = 12,  // per-layer segments, each a whole message (DGC, Accordion)
};

inline constexpr std::uint8_t kFormatVersion = 1;
inline constexpr std::size_t kHeaderBytes = 8;

// How sparse codecs carry their values. kInt2 (SparseLoCo's low-bit values): two magnitudes
// and 2 bits per value, a sign and which magnitude (compress/FORMAT.md).
enum class ValueType : std::uint8_t { kFp32 = 0, kFp16 = 1, kBf16 = 2, kInt2 = 3 };
inline constexpr auto kValueTypes = base::nameTable<ValueType>({{ValueType::kFp32, "fp32"},
                                                                {ValueType::kFp16, "fp16"},
                                                                {ValueType::kBf16, "bf16"},
                                                                {ValueType::kInt2, "int2"}});

struct Encoded {
  std::vector<std::uint8_t> bytes;
};

struct Header {
  CodecId codec = CodecId::kNone;
  std::uint32_t dim = 0;  // the decoded vector's length
};

// Reads and checks the header (version, known codec, reserved bytes zero).
std::expected<Header, std::string> readHeader(std::span<const std::uint8_t> bytes);

// The codec registry: every wire id with its name (ALGORITHMS.md's) and what kind of codec it
// is. Every other list of codecs (config choices, benches, Accordion's levels, DGC's check)
// is derived from it.
struct CodecInfo {
  CodecId id;
  std::string_view name;
  bool sparse;      // sends chosen coordinates as indices and values (topk, ..., threshold)
  bool by_density;  // k comes from `density` (threshold picks by magnitude instead)
  bool configurable = true;  // false: only built by the library (layered)
};
inline constexpr CodecInfo kCodecs[] = {
    {CodecId::kNone, "none", false, false},
    {CodecId::kFp16, "fp16", false, false},
    {CodecId::kBf16, "bf16", false, false},
    {CodecId::kTopk, "topk", true, true},
    {CodecId::kTopkSampled, "topk_sampled", true, true},
    {CodecId::kThreshold, "threshold", true, false},
    {CodecId::kRandk, "randk", true, true},
    {CodecId::kQsgd, "qsgd", false, false},
    {CodecId::kSign, "sign", false, false},
    {CodecId::kTerngrad, "terngrad", false, false},
    {CodecId::kNatural, "natural", false, false},
    {CodecId::kPowersgd, "powersgd", false, false},
    {CodecId::kLayered, "layered", false, false, false},
};
// The entry of a configurable codec's name; nullptr when there is none.
const CodecInfo* codecNamed(std::string_view name);
// The entry of a known id; nullptr otherwise.
const CodecInfo* codecInfo(CodecId id);
// "topk", "qsgd", ...; "layered" for kLayered; "unknown" otherwise.
std::string_view codecName(CodecId id);

// The wire size of k values of a type: 4 or 2 bytes each; int2: two f32 magnitudes and k
// 2-bit codes (nothing when k = 0).
constexpr std::size_t valuesBytes(ValueType t, std::size_t k) {
  if (t == ValueType::kInt2) return k == 0 ? 0 : 8 + (k + 3) / 4;
  return k * (t == ValueType::kFp32 ? 4 : 2);
}

}  // namespace phalanx::compress
