// Little-endian byte writer and bounds-checked reader for the payloads of FORMAT.md (also
// node/'s checkpoint files), with LEB128 varints; and an LSB-first bit stream (Golomb–Rice
// indices), internal to compress/. Readers never read past their span: every read reports
// failure instead.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

namespace phalanx::compress {

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

namespace detail {

// LSB-first bit stream writer (bit i of the stream is bit i % 8 of byte i / 8).
class BitWriter {
 public:
  explicit BitWriter(std::vector<std::uint8_t>& out) : out_(out) {}
  void bits(std::uint64_t v, unsigned n) {  // n <= 32
    acc_ |= (n == 0 ? 0 : (v & ((std::uint64_t(1) << n) - 1))) << pending_;
    pending_ += n;
    flushFull();
  }
  void ones(std::uint64_t n) {
    for (; n >= 32; n -= 32) bits(0xffffffffu, 32);
    bits((std::uint64_t(1) << n) - 1, unsigned(n));
  }
  void finish() {
    if (pending_ > 0) out_.push_back(std::uint8_t(acc_));
    acc_ = 0;
    pending_ = 0;
  }

 private:
  void flushFull() {
    while (pending_ >= 8) {
      out_.push_back(std::uint8_t(acc_));
      acc_ >>= 8;
      pending_ -= 8;
    }
  }
  std::vector<std::uint8_t>& out_;
  std::uint64_t acc_ = 0;
  unsigned pending_ = 0;
};

class BitReader {
 public:
  explicit BitReader(std::span<const std::uint8_t> in) : in_(in) {}
  bool bit(unsigned& b) {
    if (pos_ >= in_.size() * 8) return false;
    b = (in_[pos_ / 8] >> (pos_ % 8)) & 1u;
    ++pos_;
    return true;
  }
  bool bits(unsigned n, std::uint64_t& v) {  // n <= 32
    if (pos_ + n > in_.size() * 8) return false;
    v = 0;
    for (unsigned i = 0; i < n; ++i, ++pos_)
      v |= std::uint64_t((in_[pos_ / 8] >> (pos_ % 8)) & 1u) << i;
    return true;
  }
  // The bits left after the last read must be padding: fewer than 8, all zero.
  bool paddingIsZero() const {
    if (in_.size() * 8 - pos_ >= 8) return false;
    for (std::size_t p = pos_; p < in_.size() * 8; ++p) {
      if ((in_[p / 8] >> (p % 8)) & 1u) return false;
    }
    return true;
  }

 private:
  std::span<const std::uint8_t> in_;
  std::size_t pos_ = 0;
};

}  // namespace detail
}  // namespace phalanx::compress
