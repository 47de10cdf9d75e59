// Decoders for every payload of FORMAT.md. Each runs twice on a message: once checking only
// (nothing written), then writing, so a bad message never leaves a half-applied delta.
#include "compress/decode.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "base/bytes.h"
#include "compress/formats.h"
#include "kernels/pack.h"
#include "kernels/vector_ops.h"

namespace phalanx::compress {
namespace {

using Result = std::expected<void, std::string>;

std::unexpected<std::string> fail(std::string why) { return std::unexpected(std::move(why)); }

// Where decoded values go: nowhere (check), assigned, or added with a factor.
struct Target {
  bool write = false;
  bool add = false;
  float alpha = 1;
  std::span<float> out;

  void set(std::size_t j, float v) const {
    if (add) {
      out[j] += alpha * v;
    } else {
      out[j] = v;
    }
  }
  // Sparse payloads assign zero to everything they do not carry.
  void clearForSparse() const {
    if (write && !add) std::fill(out.begin(), out.end(), 0.0f);
  }
};

bool finiteNonNegative(float v) { return std::isfinite(v) && v >= 0.0f; }

Result finish(const ByteReader& r) {
  if (!r.done()) return fail(fmt::format("{} trailing bytes after the payload", r.remaining()));
  return {};
}

float readValue(ValueType type, std::span<const std::uint8_t> bytes, std::size_t i) {
  if (type == ValueType::kInt2) {
    const unsigned code = (bytes[8 + i / 4] >> (2 * (i % 4))) & 3u;
    const float m =
        std::bit_cast<float>(std::uint32_t(base::loadLittle(bytes.subspan(code & 2u ? 4 : 0), 4)));
    return code & 1u ? -m : m;
  }
  if (type == ValueType::kFp32) {
    return std::bit_cast<float>(std::uint32_t(base::loadLittle(bytes.subspan(i * 4), 4)));
  }
  const std::uint16_t h = std::uint16_t(bytes[i * 2] | (bytes[i * 2 + 1] << 8));
  float v = 0;
  if (type == ValueType::kFp16) {
    kernels::fromHalf({&h, 1}, {&v, 1});
  } else {
    kernels::fromBfloat16({&h, 1}, {&v, 1});
  }
  return v;
}

std::expected<ValueType, std::string> readValueType(ByteReader& r) {
  std::uint8_t t = 0;
  if (!r.u8(t)) return fail("truncated before the value type");
  if (t > std::uint8_t(ValueType::kInt2)) return fail(fmt::format("unknown value type {}", t));
  return ValueType(t);
}

// k values of `type`, all finite; returns their bytes.
std::expected<std::span<const std::uint8_t>, std::string> readValues(ByteReader& r, ValueType type,
                                                                     std::size_t k) {
  const auto bytes = r.take(valuesBytes(type, k));
  if (!bytes)
    return fail(fmt::format("truncated: {} values need {} bytes, {} left", k, valuesBytes(type, k),
                            r.remaining()));
  if (type == ValueType::kInt2 && k > 0) {
    // Two magnitudes, each finite and >= 0 (a NaN or negative one would flip or poison every
    // value), and codes past the k-th zero, so one message has one encoding.
    for (std::size_t at : {0, 4}) {
      const float m = std::bit_cast<float>(std::uint32_t(base::loadLittle(bytes->subspan(at), 4)));
      if (!finiteNonNegative(m)) return fail("an int2 magnitude is negative or not finite");
    }
    if (k % 4 != 0 && (bytes->back() >> (2 * (k % 4))) != 0)
      return fail("int2 codes have nonzero padding bits");
    return *bytes;
  }
  for (std::size_t i = 0; i < k; ++i) {
    if (!std::isfinite(readValue(type, *bytes, i)))
      return fail(fmt::format("value {} is not finite", i));
  }
  return *bytes;
}

// The wire is little-endian; so are the hosts we build for, which lets dense payloads be
// copied instead of assembled byte by byte.
static_assert(std::endian::native == std::endian::little, "phalanx assumes a little-endian host");

Result decodeDense(CodecId codec, ByteReader& r, const Target& t) {
  const std::size_t d = t.out.size();
  const ValueType type = codec == CodecId::kNone   ? ValueType::kFp32
                         : codec == CodecId::kFp16 ? ValueType::kFp16
                                                   : ValueType::kBf16;
  const auto bytes = r.take(valuesBytes(type, d));
  if (!bytes)
    return fail(fmt::format("truncated: {} values need {} bytes, {} left", d, valuesBytes(type, d),
                            r.remaining()));
  if (auto done = finish(r); !done) return done;
  if (!t.write) {
    const bool ok = type == ValueType::kFp32   ? kernels::allFiniteFloat32Bytes(*bytes)
                    : type == ValueType::kFp16 ? kernels::allFinite16BitBytes(*bytes, 0x7c00u)
                                               : kernels::allFinite16BitBytes(*bytes, 0x7f80u);
    if (!ok) return fail("a value is not finite");
    return {};
  }
  if (d == 0) return {};
  if (type == ValueType::kFp32 && !t.add) {
    std::memcpy(t.out.data(), bytes->data(), d * 4);
    return {};
  }
  // Converted in chunks through a small buffer, then assigned or added.
  constexpr std::size_t kChunk = 4096;
  float buffer[kChunk];
  std::uint16_t half[kChunk];
  for (std::size_t at = 0; at < d; at += kChunk) {
    const std::size_t n = std::min(kChunk, d - at);
    const std::uint8_t* src = bytes->data() + valuesBytes(type, at);
    if (type == ValueType::kFp32) {
      std::memcpy(buffer, src, n * 4);
    } else {
      std::memcpy(half, src, n * 2);
      if (type == ValueType::kFp16) {
        kernels::fromHalf({half, n}, {buffer, n});
      } else {
        kernels::fromBfloat16({half, n}, {buffer, n});
      }
    }
    float* dst = t.out.data() + at;
    if (t.add) {
      for (std::size_t j = 0; j < n; ++j) dst[j] += t.alpha * buffer[j];
    } else {
      std::memcpy(dst, buffer, n * 4);
    }
  }
  return {};
}

// Indices of a sparse payload, validated: strictly increasing (gap coding), all < d.
std::expected<std::vector<std::uint32_t>, std::string> readIndices(ByteReader& r, std::size_t k,
                                                                   std::size_t d) {
  std::uint8_t coding = 0;
  if (!r.u8(coding)) return fail("truncated before the index coding");
  std::vector<std::uint32_t> idx;
  idx.reserve(k);          // k <= d and k values fit the message: checked by the caller
  std::uint64_t next = 0;  // the smallest index the next entry may take
  const auto push = [&](std::uint64_t gap) -> bool {
    if (gap >= d || next + gap >= d) return false;
    idx.push_back(std::uint32_t(next + gap));
    next += gap + 1;
    return true;
  };
  if (coding == 0) {
    for (std::size_t i = 0; i < k; ++i) {
      std::uint64_t gap = 0;
      if (!r.varint(gap)) return fail(fmt::format("index {}: truncated or malformed varint", i));
      if (!push(gap)) return fail(fmt::format("index {} is out of range (length {})", i, d));
    }
    return idx;
  }
  if (coding != 1) return fail(fmt::format("unknown index coding {}", coding));
  std::uint8_t rice = 0;
  std::uint64_t stream_bytes = 0;
  if (!r.u8(rice) || rice > 31) return fail("missing or out-of-range Rice parameter");
  if (!r.varint(stream_bytes)) return fail("truncated before the Rice stream length");
  const auto stream = r.take(stream_bytes);
  if (!stream) return fail("Rice stream longer than the message");
  detail::BitReader bits(*stream);
  const std::uint64_t max_quotient = std::uint64_t(d) >> rice;
  for (std::size_t i = 0; i < k; ++i) {
    std::uint64_t q = 0;
    for (unsigned b = 1;;) {
      if (!bits.bit(b)) return fail(fmt::format("index {}: Rice stream truncated", i));
      if (b == 0) break;
      if (++q > max_quotient)
        return fail(fmt::format("index {} is out of range (length {})", i, d));
    }
    std::uint64_t low = 0;
    if (!bits.bits(rice, low)) return fail(fmt::format("index {}: Rice stream truncated", i));
    if (!push((q << rice) | low))
      return fail(fmt::format("index {} is out of range (length {})", i, d));
  }
  if (!bits.paddingIsZero()) return fail("Rice stream has extra or nonzero padding bits");
  return idx;
}

Result decodeSparse(ByteReader& r, const Target& t) {
  const std::size_t d = t.out.size();
  std::uint64_t k = 0;
  if (!r.varint(k)) return fail("truncated before k");
  if (k > d) return fail(fmt::format("k = {} exceeds the length {}", k, d));
  auto type = readValueType(r);
  if (!type) return std::unexpected(type.error());
  if (valuesBytes(*type, k) > r.remaining())
    return fail(fmt::format("k = {} values cannot fit the message", k));
  auto idx = readIndices(r, k, d);
  if (!idx) return std::unexpected(idx.error());
  auto values = readValues(r, *type, k);
  if (!values) return std::unexpected(values.error());
  if (auto done = finish(r); !done) return done;
  if (t.write) {
    t.clearForSparse();
    for (std::size_t i = 0; i < k; ++i) t.set((*idx)[i], readValue(*type, *values, i));
  }
  return {};
}

Result decodeRandk(ByteReader& r, const Target& t) {
  const std::size_t d = t.out.size();
  std::uint64_t seed = 0, k = 0;
  if (!r.u64(seed) || !r.varint(k)) return fail("truncated before the seed or k");
  if (k > d) return fail(fmt::format("k = {} exceeds the length {}", k, d));
  auto type = readValueType(r);
  if (!type) return std::unexpected(type.error());
  auto values = readValues(r, *type, k);
  if (!values) return std::unexpected(values.error());
  if (auto done = finish(r); !done) return done;
  if (t.write) {
    std::vector<std::uint32_t> idx;
    detail::randkIndices(seed, d, k, idx);
    t.clearForSparse();
    for (std::size_t i = 0; i < k; ++i) t.set(idx[i], readValue(*type, *values, i));
  }
  return {};
}

// Per-bucket float scales: count = ceil(d / bucket), each finite and >= 0.
std::expected<std::vector<float>, std::string> readScales(ByteReader& r, std::size_t d,
                                                          std::uint32_t bucket) {
  if (bucket == 0) return fail("bucket size 0");
  const std::size_t count = (d + bucket - 1) / bucket;
  if (count * 4 > r.remaining())
    return fail(fmt::format("{} bucket scales cannot fit the message", count));
  std::vector<float> scales(count);
  for (float& s : scales) {
    r.f32(s);
    if (!finiteNonNegative(s)) return fail("a bucket scale is negative or not finite");
  }
  return scales;
}

// The packed codes of d entries of `width` bits, exactly, ending the payload; each passed to
// `use(j, code)`, which returns false to reject. Streams without allocating d codes.
template <typename Use>
Result readCodes(ByteReader& r, std::size_t d, unsigned width, Use use) {
  const auto bytes = r.take(kernels::packedBytes(d, width));
  if (!bytes)
    return fail(fmt::format("truncated: {} codes of {} bits need {} bytes, {} left", d, width,
                            kernels::packedBytes(d, width), r.remaining()));
  const std::uint32_t mask = (1u << width) - 1;
  std::uint64_t acc = 0;
  unsigned have = 0;
  std::size_t at = 0;
  for (std::size_t j = 0; j < d; ++j) {
    while (have < width) {
      acc |= std::uint64_t((*bytes)[at++]) << have;
      have += 8;
    }
    if (!use(j, std::uint32_t(acc) & mask))
      return fail(fmt::format("entry {}: invalid code {}", j, std::uint32_t(acc) & mask));
    acc >>= width;
    have -= width;
  }
  if (acc != 0) return fail("nonzero padding bits after the codes");
  return finish(r);  // the codes are always the payload's last field
}

Result decodeQsgd(ByteReader& r, const Target& t) {
  const std::size_t d = t.out.size();
  std::uint8_t bits = 0, flags = 0;
  std::uint16_t levels = 0;
  std::uint32_t bucket = 0;
  if (!r.u8(bits) || !r.u16(levels) || !r.u32(bucket) || !r.u8(flags))
    return fail("truncated qsgd header");
  if (bits < 2 || bits > 16) return fail(fmt::format("qsgd bits {} outside 2..16", bits));
  if (levels < 1 || levels >= (1u << (bits - 1)))
    return fail(fmt::format("qsgd levels {} do not fit {} bits", levels, bits));
  if (flags > 1) return fail(fmt::format("unknown qsgd flags {}", flags));
  auto norms = readScales(r, d, bucket);
  if (!norms) return std::unexpected(norms.error());
  const std::uint32_t negative = 1u << (bits - 1);
  return readCodes(r, d, bits, [&](std::size_t j, std::uint32_t code) {
    const std::uint32_t level = code & (negative - 1);
    if (level > levels || code == negative) return false;  // beyond s, or a negative zero
    if (t.write) {
      const double v = double((*norms)[j / bucket]) * double(level) / double(levels);
      t.set(j, float(code & negative ? -v : v));
    }
    return true;
  });
}

Result decodeSign(ByteReader& r, const Target& t) {
  const std::size_t d = t.out.size();
  std::uint32_t bucket = 0;
  if (!r.u32(bucket)) return fail("truncated sign header");
  auto scales = readScales(r, d, bucket);
  if (!scales) return std::unexpected(scales.error());
  return readCodes(r, d, 1, [&](std::size_t j, std::uint32_t negative) {
    if (t.write) t.set(j, negative ? -(*scales)[j / bucket] : (*scales)[j / bucket]);
    return true;
  });
}

Result decodeTerngrad(ByteReader& r, const Target& t) {
  float scale = 0;
  if (!r.f32(scale)) return fail("truncated terngrad header");
  if (!finiteNonNegative(scale)) return fail("terngrad scale is negative or not finite");
  return readCodes(r, t.out.size(), 2, [&](std::size_t j, std::uint32_t code) {
    if (code == 3) return false;
    if (t.write) t.set(j, code == 0 ? 0.0f : code == 1 ? scale : -scale);
    return true;
  });
}

Result decodeNatural(ByteReader& r, const Target& t) {
  std::int16_t top = 0;
  if (!r.i16(top)) return fail("truncated natural header");
  if (top < -23 || top > 127)
    return fail(fmt::format("natural top exponent {} outside -23..127", top));
  return readCodes(r, t.out.size(), 8, [&](std::size_t j, std::uint32_t code) {
    if (code == 0x80) return false;  // a negative zero is not canonical
    if (t.write) {
      const unsigned c = code & 0x7f;
      const float m = c == 0 ? 0.0f : std::ldexp(1.0f, int(top) - 127 + int(c));
      t.set(j, code & 0x80 ? -m : m);
    }
    return true;
  });
}

Result decodePowersgd(ByteReader& r, const Target& t) {
  const std::size_t d = t.out.size();
  std::uint64_t segments = 0;
  if (!r.varint(segments)) return fail("truncated before the segment count");
  if (segments > r.remaining()) return fail("segment count larger than the message");
  std::size_t offset = 0;
  for (std::uint64_t s = 0; s < segments; ++s) {
    std::uint8_t kind = 0;
    std::uint64_t rows = 0, cols = 0;
    if (!r.u8(kind) || !r.varint(rows) || !r.varint(cols))
      return fail(fmt::format("segment {}: truncated", s));
    if (kind > 1) return fail(fmt::format("segment {}: unknown kind {}", s, kind));
    if (rows == 0 || cols == 0 || rows > d - offset || cols > (d - offset) / rows) {
      return fail(fmt::format("segment {}: {} x {} does not fit the remaining {} entries", s, rows,
                              cols, d - offset));
    }
    const std::span<float> part = t.out.subspan(offset, rows * cols);
    if (kind == 0) {
      auto values = readValues(r, ValueType::kFp32, rows * cols);
      if (!values) return fail(fmt::format("segment {}: {}", s, values.error()));
      if (t.write) {
        for (std::size_t j = 0; j < part.size(); ++j)
          t.set(offset + j, readValue(ValueType::kFp32, *values, j));
      }
    } else {
      std::uint8_t rank = 0;
      if (!r.u8(rank)) return fail(fmt::format("segment {}: truncated", s));
      if (rank < 1 || rank > std::min(rows, cols))
        return fail(fmt::format("segment {}: rank {} invalid for {} x {}", s, rank, rows, cols));
      auto p = readValues(r, ValueType::kFp32, rows * rank);
      if (!p) return fail(fmt::format("segment {}: P: {}", s, p.error()));
      auto q = readValues(r, ValueType::kFp32, cols * rank);
      if (!q) return fail(fmt::format("segment {}: Q: {}", s, q.error()));
      // |(P Qᵀ)_ij| <= ‖P_i‖·‖Q_j‖: factors whose largest rows could overflow float are
      // refused, so an accepted message always decodes to finite values.
      const auto largestRow = [rank](std::span<const std::uint8_t> m, std::size_t count) {
        double largest = 0;
        for (std::size_t i = 0; i < count; ++i) {
          double sq = 0;
          for (std::size_t c = 0; c < rank; ++c) {
            const double v = readValue(ValueType::kFp32, m, i * rank + c);
            sq += v * v;
          }
          largest = std::max(largest, std::sqrt(sq));
        }
        return largest;
      };
      if (largestRow(*p, rows) * largestRow(*q, cols) > double(std::numeric_limits<float>::max())) {
        return fail(fmt::format("segment {}: factors large enough to overflow", s));
      }
      if (t.write) {
        std::vector<float> pf(rows * rank), qf(cols * rank);
        for (std::size_t i = 0; i < pf.size(); ++i) pf[i] = readValue(ValueType::kFp32, *p, i);
        for (std::size_t i = 0; i < qf.size(); ++i) qf[i] = readValue(ValueType::kFp32, *q, i);
        for (std::size_t i = 0; i < rows; ++i) {
          for (std::size_t j = 0; j < cols; ++j) {
            double acc = 0;
            for (std::size_t c = 0; c < rank; ++c)
              acc += double(pf[i * rank + c]) * double(qf[j * rank + c]);
            t.set(offset + i * cols + j, float(acc));
          }
        }
      }
    }
    offset += rows * cols;
  }
  if (offset != d) return fail(fmt::format("segments cover {} of {} entries", offset, d));
  return finish(r);
}

Result decodeBody(std::span<const std::uint8_t> bytes, const Target& t, bool nested);

Result decodeLayered(ByteReader& r, const Target& t) {
  const std::size_t d = t.out.size();
  std::uint64_t segments = 0;
  if (!r.varint(segments)) return fail("truncated before the segment count");
  if (segments > r.remaining()) return fail("segment count larger than the message");
  std::size_t offset = 0;
  for (std::uint64_t s = 0; s < segments; ++s) {
    std::uint64_t length = 0;
    if (!r.varint(length)) return fail(fmt::format("segment {}: truncated length", s));
    const auto inner = r.take(length);
    if (!inner) return fail(fmt::format("segment {}: longer than the message", s));
    const auto header = readHeader(*inner);
    if (!header) return fail(fmt::format("segment {}: {}", s, header.error()));
    if (header->dim > d - offset)
      return fail(fmt::format("segment {}: length {} exceeds the remaining {}", s, header->dim,
                              d - offset));
    Target part = t;
    part.out = t.out.subspan(offset, header->dim);
    if (auto ok = decodeBody(*inner, part, true); !ok)
      return fail(fmt::format("segment {}: {}", s, ok.error()));
    offset += header->dim;
  }
  if (offset != d) return fail(fmt::format("segments cover {} of {} entries", offset, d));
  return finish(r);
}

// The message's header has been checked to announce t.out.size() entries.
Result decodeBody(std::span<const std::uint8_t> bytes, const Target& t, bool nested) {
  const auto header = readHeader(bytes);
  if (!header) return std::unexpected(header.error());
  ByteReader r(bytes.subspan(kHeaderBytes));
  switch (header->codec) {
    case CodecId::kNone:
    case CodecId::kFp16:
    case CodecId::kBf16:
      return decodeDense(header->codec, r, t);
    case CodecId::kTopk:
    case CodecId::kTopkSampled:
    case CodecId::kThreshold:
      return decodeSparse(r, t);
    case CodecId::kRandk:
      return decodeRandk(r, t);
    case CodecId::kQsgd:
      return decodeQsgd(r, t);
    case CodecId::kSign:
      return decodeSign(r, t);
    case CodecId::kTerngrad:
      return decodeTerngrad(r, t);
    case CodecId::kNatural:
      return decodeNatural(r, t);
    case CodecId::kPowersgd:
      return decodePowersgd(r, t);
    case CodecId::kLayered:
      if (nested) return fail("a layered message inside a layered message");
      return decodeLayered(r, t);
  }
  return fail("unknown codec");
}

Result run(std::span<const std::uint8_t> bytes, Target t) {
  const auto header = readHeader(bytes);
  if (!header) return std::unexpected(header.error());
  if (header->dim != t.out.size()) {
    return fail(fmt::format("{} message for length {}, expected {}", codecName(header->codec),
                            header->dim, t.out.size()));
  }
  Target check = t;
  check.write = false;
  if (auto ok = decodeBody(bytes, check, false); !ok) {
    return fail(fmt::format("{}: {}", codecName(header->codec), ok.error()));
  }
  return decodeBody(bytes, t, false);
}

}  // namespace

std::expected<Header, std::string> readHeader(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kHeaderBytes)
    return fail(fmt::format("message of {} bytes is shorter than the header", bytes.size()));
  if (bytes[0] != kFormatVersion) return fail(fmt::format("unknown format version {}", bytes[0]));
  if (bytes[1] > std::uint8_t(CodecId::kLayered))
    return fail(fmt::format("unknown codec id {}", bytes[1]));
  if (bytes[2] != 0 || bytes[3] != 0) return fail("reserved header bytes are not zero");
  return Header{CodecId(bytes[1]), std::uint32_t(base::loadLittle(bytes.subspan(4), 4))};
}

const CodecInfo* codecNamed(std::string_view name) {
  for (const CodecInfo& c : kCodecs) {
    if (c.configurable && c.name == name) return &c;
  }
  return nullptr;
}

const CodecInfo* codecInfo(CodecId id) {
  for (const CodecInfo& c : kCodecs) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

std::string_view codecName(CodecId id) {
  const CodecInfo* c = codecInfo(id);
  return c ? c->name : std::string_view("unknown");
}

std::expected<void, std::string> decode(std::span<const std::uint8_t> bytes, std::span<float> out) {
  return run(bytes, Target{.write = true, .add = false, .alpha = 1, .out = out});
}

std::optional<std::span<const float>> viewDense(std::span<const std::uint8_t> bytes,
                                                std::size_t dim,
                                                std::atomic<std::int8_t>* finite_memo) {
  const auto header = readHeader(bytes);
  if (!header || header->codec != CodecId::kNone || header->dim != dim) return std::nullopt;
  const auto values = bytes.subspan(kHeaderBytes);
  if (values.size() != dim * sizeof(float) ||
      reinterpret_cast<std::uintptr_t>(values.data()) % alignof(float) != 0) {
    return std::nullopt;
  }
  // The verdict depends on the bytes alone; two readers racing both compute and store it.
  std::int8_t finite = finite_memo ? finite_memo->load(std::memory_order_relaxed) : -1;
  if (finite < 0) {
    finite = kernels::allFiniteFloat32Bytes(values) ? 1 : 0;
    if (finite_memo) finite_memo->store(finite, std::memory_order_relaxed);
  }
  if (finite == 0) return std::nullopt;
  return std::span<const float>(reinterpret_cast<const float*>(values.data()), dim);
}

std::expected<void, std::string> decodeAdd(std::span<const std::uint8_t> bytes, float alpha,
                                           std::span<float> out) {
  return run(bytes, Target{.write = true, .add = true, .alpha = alpha, .out = out});
}

}  // namespace phalanx::compress
