#include "base/bytes.h"

#include <gtest/gtest.h>

#include <array>
#include <limits>

namespace phalanx::base {
namespace {

TEST(Bytes, WriterAndReaderRoundTripLittleEndian) {
  std::vector<std::uint8_t> b;
  ByteWriter w(b);
  w.u8(0xab);
  w.u16(0x1234);
  w.u32(0xdeadbeef);
  w.u64(0x0102030405060708ull);
  w.i16(-2);
  w.f32(-1.5f);
  w.varint(300);
  w.varint(std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(b[1], 0x34);  // least significant byte first
  EXPECT_EQ(b[2], 0x12);
  ByteReader r(b);
  std::uint8_t u8 = 0;
  std::uint16_t u16 = 0;
  std::uint32_t u32 = 0;
  std::uint64_t u64 = 0, v1 = 0, v2 = 0;
  std::int16_t i16 = 0;
  float f = 0;
  ASSERT_TRUE(r.u8(u8) && r.u16(u16) && r.u32(u32) && r.u64(u64) && r.i16(i16) && r.f32(f) &&
              r.varint(v1) && r.varint(v2));
  EXPECT_EQ(u8, 0xab);
  EXPECT_EQ(u16, 0x1234);
  EXPECT_EQ(u32, 0xdeadbeefu);
  EXPECT_EQ(u64, 0x0102030405060708ull);
  EXPECT_EQ(i16, -2);
  EXPECT_EQ(f, -1.5f);
  EXPECT_EQ(v1, 300u);
  EXPECT_EQ(v2, std::numeric_limits<std::uint64_t>::max());
  EXPECT_TRUE(r.done());
  EXPECT_FALSE(r.u8(u8));  // never past the span
}

TEST(Bytes, ReaderRefusesShortAndNonCanonicalInput) {
  const std::array<std::uint8_t, 3> three{1, 2, 3};
  ByteReader r(three);
  std::uint32_t u32 = 0;
  EXPECT_FALSE(r.u32(u32));
  EXPECT_EQ(r.remaining(), 3u);  // a failed read takes nothing
  EXPECT_FALSE(r.take(4));
  ASSERT_TRUE(r.take(3));
  const std::array<std::uint8_t, 2> padded{0x81, 0x00};  // 1 with a redundant zero byte
  std::uint64_t v = 0;
  EXPECT_FALSE(ByteReader(padded).varint(v));
  const std::array<std::uint8_t, 1> cut{0x80};  // a continuation bit with nothing after it
  EXPECT_FALSE(ByteReader(cut).varint(v));
}

TEST(Bytes, FixedWidthStoreAndLoad) {
  std::array<std::uint8_t, 4> out{};
  storeLittle(0x0a0b0c0d, out, 4);
  EXPECT_EQ(out, (std::array<std::uint8_t, 4>{0x0d, 0x0c, 0x0b, 0x0a}));
  EXPECT_EQ(loadLittle(out, 4), 0x0a0b0c0du);
  EXPECT_EQ(loadLittle(out, 2), 0x0c0du);
}

}  // namespace
}  // namespace phalanx::base
