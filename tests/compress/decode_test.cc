// Hostile messages: every malformed payload is rejected with an error and writes nothing.
#include "compress/decode.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>

#include "base/bytes.h"
#include "compress/compressor.h"
#include "compress/formats.h"
#include "tests/compress/compress_test_util.h"

namespace phalanx::compress {
namespace {

using base::ByteWriter;

std::vector<std::uint8_t> header(CodecId id, std::uint32_t d) {
  std::vector<std::uint8_t> b;
  ByteWriter w(b);
  detail::writeHeader(w, id, d);
  return b;
}

// Expects an error whose text contains `what`, and `out` unchanged.
void expectRejected(const std::vector<std::uint8_t>& bytes, std::size_t d,
                    const std::string& what) {
  std::vector<float> out(d, 42.0f);
  auto r = decode(bytes, out);
  ASSERT_FALSE(r.has_value()) << "accepted; expected: " << what;
  EXPECT_NE(r.error().find(what), std::string::npos) << r.error();
  auto a = decodeAdd(bytes, 1.0f, out);
  EXPECT_FALSE(a.has_value());
  for (const float v : out) ASSERT_EQ(v, 42.0f);
}

TEST(Decode, HeaderChecks) {
  expectRejected({1, 0, 0}, 0, "shorter than the header");
  auto b = header(CodecId::kNone, 2);
  b[0] = 9;
  expectRejected(b, 2, "format version");
  b = header(CodecId::kNone, 2);
  b[1] = 200;
  expectRejected(b, 2, "unknown codec");
  b = header(CodecId::kNone, 2);
  b[2] = 1;
  expectRejected(b, 2, "reserved");
  expectRejected(header(CodecId::kNone, 0xffffffffu), 3, "expected 3");  // huge declared size
}

TEST(Decode, DenseLengthsAndNonFinite) {
  auto b = header(CodecId::kNone, 2);
  ByteWriter w(b);
  w.f32(1.0f);
  expectRejected(b, 2, "truncated");
  w.f32(std::nanf(""));
  expectRejected(b, 2, "not finite");
  b = header(CodecId::kNone, 1);
  ByteWriter w2(b);
  w2.f32(1.0f);
  w2.u8(0);
  expectRejected(b, 1, "trailing");
  b = header(CodecId::kFp16, 1);
  ByteWriter w3(b);
  w3.u16(0x7c00);  // +Inf in binary16
  expectRejected(b, 1, "not finite");
}

std::vector<std::uint8_t> sparse(std::uint32_t d, std::vector<std::uint64_t> gaps,
                                 std::vector<float> values) {
  auto b = header(CodecId::kTopk, d);
  ByteWriter w(b);
  w.varint(gaps.size());
  w.u8(0);  // fp32
  w.u8(0);  // varint gaps
  for (auto g : gaps) w.varint(g);
  for (float v : values) w.f32(v);
  return b;
}

TEST(Decode, SparseIndicesAndValues) {
  std::vector<float> out(10, 5.0f);
  ASSERT_TRUE(decode(sparse(10, {2, 0, 5}, {1, 2, 3}), out).has_value());
  EXPECT_EQ(out, (std::vector<float>{0, 0, 1, 2, 0, 0, 0, 0, 0, 3}));  // indices 2, 3, 9
  expectRejected(sparse(10, {2, 0, 6}, {1, 2, 3}), 10, "out of range");
  expectRejected(sparse(10, {10}, {1}), 10, "out of range");
  expectRejected(sparse(10, {0xffffffffffffull}, {1}), 10, "out of range");
  expectRejected(sparse(10, {1}, {INFINITY}), 10, "not finite");
  expectRejected(sparse(10, {1, 1}, {1}), 10, "cannot fit");
  // k larger than d, or than the message can hold: refused before any allocation.
  auto huge = header(CodecId::kTopk, 10);
  ByteWriter w(huge);
  w.varint(1ull << 40);
  expectRejected(huge, 10, "exceeds the length");
  auto big = header(CodecId::kTopk, 1u << 30);
  ByteWriter w2(big);
  w2.varint(1u << 29);
  w2.u8(0);
  std::vector<float> large(1u << 30 >> 10);  // the receiver's size differs: rejected at the header
  EXPECT_FALSE(decode(big, large).has_value());
}

TEST(Decode, Int2ValuesAreChecked) {
  const std::vector<float> x{4, -1, 0.5, -3, 2, 0, 0, 0};
  Encoded e;
  ASSERT_TRUE(
      testing::makeOrDie({.codec = CodecId::kTopk, .density = 0.5, .values = ValueType::kInt2})
          ->encode(x, e)
          .has_value());
  const std::size_t values = e.bytes.size() - valuesBytes(ValueType::kInt2, 4);
  ASSERT_EQ(e.bytes[kHeaderBytes + 1], std::uint8_t(ValueType::kInt2));  // after k's varint
  const auto with = [&](std::size_t at, float v) {
    auto b = e.bytes;
    std::memcpy(b.data() + at, &v, 4);
    return b;
  };
  expectRejected(with(values, -1.0f), 8, "int2 magnitude is negative or not finite");
  expectRejected(with(values + 4, NAN), 8, "int2 magnitude");
  expectRejected(with(values + 4, INFINITY), 8, "int2 magnitude");
  auto padded = e.bytes;
  padded.push_back(0);  // a fifth code would need a byte of its own: trailing here
  expectRejected(padded, 8, "trailing");
  // k = 3 of a 4-code byte: the fourth code's bits must be zero.
  Encoded three;
  ASSERT_TRUE(
      testing::makeOrDie({.codec = CodecId::kTopk, .density = 3.0 / 8, .values = ValueType::kInt2})
          ->encode(x, three)
          .has_value());
  auto dirty = three.bytes;
  dirty.back() = std::uint8_t(dirty.back() | 0x80);
  expectRejected(dirty, 8, "nonzero padding bits");
  auto unknown = e.bytes;
  unknown[kHeaderBytes + 1] = 4;
  expectRejected(unknown, 8, "unknown value type 4");
}

TEST(Decode, NonCanonicalVarintsAreRejected) {
  auto b = header(CodecId::kTopk, 10);
  ByteWriter w(b);
  w.u8(0x81);  // k = 1 written in two bytes
  w.u8(0x00);
  expectRejected(b, 10, "");
}

TEST(Decode, UnsortedIndicesCannotBeExpressedAndRiceIsChecked) {
  // Indices are gaps, so order is structural; a Rice stream with a runaway quotient is not.
  auto b = header(CodecId::kTopk, 64);
  ByteWriter w(b);
  w.varint(1);
  w.u8(0);
  w.u8(1);  // Rice
  w.u8(2);  // r = 2: quotient may not exceed 64 >> 2 = 16
  w.varint(4);
  for (int i = 0; i < 4; ++i) w.u8(0xff);  // 32 ones: quotient 32
  w.f32(1.0f);
  expectRejected(b, 64, "out of range");
}

TEST(Decode, QuantizedCodesAreChecked) {
  // qsgd, 3 bits, s = 3: code 0b100 is a negative zero, level 4 does not exist (max 3).
  auto q = [](std::uint8_t packed) {
    auto b = header(CodecId::kQsgd, 2);
    ByteWriter w(b);
    w.u8(3);
    w.u16(3);
    w.u32(128);
    w.u8(0);
    w.f32(1.0f);
    w.u8(packed);
    return b;
  };
  std::vector<float> out(2);
  ASSERT_TRUE(decode(q(0b001011), out).has_value());  // levels 3, 1
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FLOAT_EQ(out[1], 1.0f / 3);
  expectRejected(q(0b000100), 2, "invalid code");
  expectRejected(q(0b100000), 2, "invalid code");  // second entry: a negative zero
  expectRejected(q(0b11000000 | 0b011), 2, "padding");
  auto levels = header(CodecId::kQsgd, 2);
  ByteWriter w(levels);
  w.u8(3);
  w.u16(4);  // 4 levels do not fit 2 magnitude bits
  w.u32(128);
  w.u8(0);
  expectRejected(levels, 2, "do not fit");
  auto neg = header(CodecId::kSign, 2);
  ByteWriter w2(neg);
  w2.u32(2);
  w2.f32(-1.0f);
  w2.u8(0);
  expectRejected(neg, 2, "negative");
  auto tern = header(CodecId::kTerngrad, 1);
  ByteWriter w3(tern);
  w3.f32(1.0f);
  w3.u8(3);
  expectRejected(tern, 1, "invalid code");
  auto nat = header(CodecId::kNatural, 1);
  ByteWriter w4(nat);
  w4.i16(400);
  w4.u8(1);
  expectRejected(nat, 1, "top exponent");
}

TEST(Decode, SegmentedMessagesMustTileTheVector) {
  auto p = header(CodecId::kPowersgd, 6);
  ByteWriter w(p);
  w.varint(1);
  w.u8(0);
  w.varint(5);
  w.varint(1);
  for (int i = 0; i < 5; ++i) w.f32(1.0f);
  expectRejected(p, 6, "cover 5 of 6");
  auto r = header(CodecId::kPowersgd, 4);
  ByteWriter w1(r);
  w1.varint(1);
  w1.u8(1);
  w1.varint(2);
  w1.varint(2);
  w1.u8(3);  // rank 3 on a 2 x 2 matrix
  expectRejected(r, 4, "rank 3 invalid");
  // Finite factors whose product overflows float (found by the fuzz smoke run).
  auto big = header(CodecId::kPowersgd, 4);
  ByteWriter wb(big);
  wb.varint(1);
  wb.u8(1);
  wb.varint(2);
  wb.varint(2);
  wb.u8(1);
  for (int i = 0; i < 4; ++i) wb.f32(1e30f);
  expectRejected(big, 4, "overflow");
  // A layered message may not nest another one.
  auto inner = header(CodecId::kLayered, 1);
  ByteWriter wi(inner);
  wi.varint(0);
  auto outer = header(CodecId::kLayered, 1);
  ByteWriter wo(outer);
  wo.varint(1);
  detail::appendSegment(wo, inner);
  expectRejected(outer, 1, "inside a layered");
}

TEST(Decode, EveryTruncationOfEveryCodecIsRejected) {
  const auto x = testing::bellVector(300, 3);
  std::vector<CompressorConfig> configs;
  for (const std::string& codec : kCodecNames) {
    configs.push_back({.codec = testing::codecId(codec), .density = 0.05, .seed = 5});
    if (codec == "powersgd") configs.back().layers = {{20, 15}};
  }
  configs.push_back({.codec = CodecId::kTopk, .density = 0.05, .values = ValueType::kInt2});
  for (const CompressorConfig& config : configs) {
    const std::string codec(codecName(config.codec));
    Encoded e;
    ASSERT_TRUE(testing::makeOrDie(config)->encode(x, e).has_value());
    for (std::size_t cut = 0; cut < e.bytes.size(); ++cut) {
      std::vector<std::uint8_t> part(e.bytes.begin(), e.bytes.begin() + std::ptrdiff_t(cut));
      std::vector<float> out(x.size(), 42.0f);
      ASSERT_FALSE(decode(part, out).has_value()) << codec << " cut at " << cut;
    }
  }
}

// Random bytes behind a valid header, and random flips of valid messages: never a crash
// (ASan runs this), and whatever is accepted decodes to finite values.
TEST(Decode, RandomAndMutatedBytesNeverCrash) {
  std::mt19937 rng(2024);
  const auto x = testing::bellVector(257, 4);
  std::vector<std::vector<std::uint8_t>> seeds;
  for (const std::string& codec : kCodecNames) {
    CompressorConfig config{.codec = testing::codecId(codec), .density = 0.1, .seed = 5};
    if (codec == "powersgd") config.layers = {{257, 1}, {0, 1}};
    if (codec == "powersgd") continue;
    Encoded e;
    ASSERT_TRUE(testing::makeOrDie(config)->encode(x, e).has_value());
    seeds.push_back(e.bytes);
  }
  Encoded int2;
  ASSERT_TRUE(
      testing::makeOrDie({.codec = CodecId::kTopk, .density = 0.1, .values = ValueType::kInt2})
          ->encode(x, int2)
          .has_value());
  seeds.push_back(int2.bytes);
  std::size_t accepted = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<std::uint8_t> b;
    if (trial % 2 == 0) {
      b = header(CodecId(rng() % 13), 257);
      const std::size_t n = rng() % 600;
      for (std::size_t i = 0; i < n; ++i) b.push_back(std::uint8_t(rng()));
    } else {
      b = seeds[rng() % seeds.size()];
      const int flips = 1 + int(rng() % 4);
      for (int f = 0; f < flips; ++f)
        b[kHeaderBytes + rng() % (b.size() - kHeaderBytes)] ^= std::uint8_t(1u << (rng() % 8));
    }
    std::vector<float> out(257, 0.0f);
    if (decode(b, out).has_value()) {
      ++accepted;
      for (const float v : out) ASSERT_TRUE(std::isfinite(v));
    }
  }
  RecordProperty("accepted", int(accepted));
}

TEST(Decode, DecodeAddTouchesOnlyWhatTheMessageCarries) {
  std::vector<float> acc{1, 1, 1, 1};
  ASSERT_TRUE(decodeAdd(sparse(4, {1}, {2.0f}), 0.5f, acc).has_value());
  EXPECT_EQ(acc, (std::vector<float>{1, 2, 1, 1}));
}

}  // namespace
}  // namespace phalanx::compress
