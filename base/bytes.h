// Little-endian byte coding, the one home for it: a writer and a bounds-checked reader with
// LEB128 varints (compress/'s payloads, node/'s checkpoints), and fixed-width loads and stores
// into a span (net/'s length prefixes). Readers never read past their span: every read reports
// failure instead.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

namespace phalanx::base {

class ByteWriter {
 public:
  explicit ByteWriter(std::vector<std::uint8_t>& out) : out_(out) {}

  void u8(std::uint8_t v) { out_.push_back(v); }
  void u16(std::uint16_t v) { little(v, 2); }
  void u32(std::uint32_t v) { little(v, 4); }
  void u64(std::uint64_t v) { little(v, 8); }
  void i16(std::int16_t v) { u16(std::uint16_t(v)); }
  void f32(float v) { u32(std::bit_cast<std::uint32_t>(v)); }
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(std::uint8_t(v | 0x80));
      v >>= 7;
    }
    out_.push_back(std::uint8_t(v));
  }
  // Reserves n bytes at the end and returns them for a kernel to fill.
  std::span<std::uint8_t> grow(std::size_t n) {
    const std::size_t at = out_.size();
    out_.resize(at + n);
    return {out_.data() + at, n};
  }
  std::size_t size() const { return out_.size(); }

 private:
  void little(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(std::uint8_t(v >> (8 * i)));
  }
  std::vector<std::uint8_t>& out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const std::uint8_t> in) : in_(in) {}

  std::size_t remaining() const { return in_.size() - at_; }
  bool done() const { return at_ == in_.size(); }

  bool u8(std::uint8_t& v) { return little(v); }
  bool u16(std::uint16_t& v) { return little(v); }
  bool u32(std::uint32_t& v) { return little(v); }
  bool u64(std::uint64_t& v) { return little(v); }
  bool i16(std::int16_t& v) {
    std::uint16_t u = 0;
    if (!little(u)) return false;
    v = std::int16_t(u);
    return true;
  }
  bool f32(float& v) {
    std::uint32_t u = 0;
    if (!little(u)) return false;
    v = std::bit_cast<float>(u);
    return true;
  }
  // Canonical LEB128 only: at most 10 bytes, no overflow, no redundant trailing zero byte.
  bool varint(std::uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      std::uint8_t b = 0;
      if (!u8(b)) return false;
      if (shift == 63 && b > 1) return false;
      v |= std::uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return !(b == 0 && shift > 0);
    }
    return false;
  }
  std::optional<std::span<const std::uint8_t>> take(std::size_t n) {
    if (n > remaining()) return std::nullopt;
    const auto s = in_.subspan(at_, n);
    at_ += n;
    return s;
  }

 private:
  template <typename T>
  bool little(T& v) {
    if (remaining() < sizeof(T)) return false;
    std::uint64_t acc = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) acc |= std::uint64_t(in_[at_ + i]) << (8 * i);
    v = T(acc);
    at_ += sizeof(T);
    return true;
  }
  std::span<const std::uint8_t> in_;
  std::size_t at_ = 0;
};

// The n <= 8 low bytes of v, least significant first, into out[0..n).
inline void storeLittle(std::uint64_t v, std::span<std::uint8_t> out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = std::uint8_t(v >> (8 * i));
}

// The little-endian number in in[0..n), n <= 8 (the caller checked the length).
inline std::uint64_t loadLittle(std::span<const std::uint8_t> in, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t(in[i]) << (8 * i);
  return v;
}

}  // namespace phalanx::base
