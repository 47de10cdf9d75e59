// An LSB-first bit stream (bit i of the stream is bit i % 8 of byte i / 8) for the Golomb–Rice
// indices of FORMAT.md; internal to compress/. The reader never reads past its span.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace phalanx::compress {

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
