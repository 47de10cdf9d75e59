// Framing and envelope checks: round trips, and every kind of hostile byte stream.
#include "net/frame.h"

#include <gtest/gtest.h>

#include <random>

#include "net/refusal.h"

namespace phalanx::net {
namespace {

v1::Envelope roundMessage(std::uint64_t round, std::uint32_t sender, std::string payload) {
  v1::Envelope e;
  auto* m = e.mutable_round();
  m->set_round(round);
  m->set_sender(sender);
  m->set_sequence(7);
  m->set_kind(v1::RoundMessage::DELTA);
  m->set_codec(3);
  m->set_payload(std::move(payload));
  return e;
}

TEST(Frame, LengthPrefixIsLittleEndianAndRoundTrips) {
  const auto e = roundMessage(5, 2, std::string(300, 'x'));
  const auto bytes = encodeFrame(e);
  const std::size_t body = bytes.size() - kLengthBytes;
  EXPECT_EQ(bytes[0], std::uint8_t(body));
  EXPECT_EQ(bytes[1], std::uint8_t(body >> 8));
  EXPECT_EQ(bytes[2], 0);
  FrameReader reader(maxFrameBytes(100));
  reader.feed(bytes);
  v1::Envelope got;
  ASSERT_EQ(reader.next(got), true);
  EXPECT_EQ(got.round().payload(), std::string(300, 'x'));
  EXPECT_EQ(got.round().round(), 5u);
  EXPECT_EQ(reader.next(got), false);  // needs more bytes
}

TEST(Frame, ByteAtATimeAndManyFramesInOneChunk) {
  std::vector<std::uint8_t> stream;
  for (int i = 0; i < 20; ++i)
    appendFrame(roundMessage(std::uint64_t(i), 1, std::string(std::size_t(i), 'a')), stream);
  FrameReader reader(maxFrameBytes(10));
  int seen = 0;
  for (const std::uint8_t b : stream) {
    reader.feed({&b, 1});
    v1::Envelope got;
    while (true) {
      const auto next = reader.next(got);
      ASSERT_TRUE(next.has_value());
      if (!*next) break;
      EXPECT_EQ(got.round().round(), std::uint64_t(seen));
      ++seen;
    }
  }
  EXPECT_EQ(seen, 20);
  EXPECT_EQ(reader.buffered(), 0u);
}

TEST(Frame, OversizedAndEmptyLengthsAreRefusedBeforeReadingTheBody) {
  FrameReader reader(1000);
  const std::vector<std::uint8_t> huge{0xff, 0xff, 0xff, 0x7f};
  reader.feed(huge);
  v1::Envelope e;
  const auto got = reader.next(e);
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error(), FrameError::kOversized);
  EXPECT_EQ(refusalName(got.error()), "oversized");
  // The stream is dead after an error, whatever follows.
  reader.feed(encodeFrame(roundMessage(1, 1, "ok")));
  EXPECT_EQ(reader.next(e), std::unexpected(FrameError::kOversized));
  FrameReader empty(1000);
  const std::vector<std::uint8_t> zero{0, 0, 0, 0};
  empty.feed(zero);
  EXPECT_EQ(empty.next(e), std::unexpected(FrameError::kEmpty));
}

TEST(Frame, MalformedEmptyAndInvalidBodies) {
  const std::vector<std::uint8_t> garbage{0xff, 0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(parseBody(garbage).error(), FrameError::kMalformed);
  v1::Envelope nothing;
  nothing.mutable_heartbeat();
  nothing.clear_body();
  EXPECT_EQ(parseBody({}).error(), FrameError::kNoBody);
  auto bad_kind = roundMessage(1, 1, "");
  bad_kind.mutable_round()->set_kind(v1::RoundMessage::Kind(42));
  const auto bytes = encodeFrame(bad_kind);
  EXPECT_EQ(parseBody(std::span(bytes).subspan(kLengthBytes)).error(), FrameError::kInvalid);
  v1::Envelope hello;
  hello.mutable_hello()->set_cluster_id(std::string(5000, 'c'));
  const auto hb = encodeFrame(hello);
  EXPECT_EQ(parseBody(std::span(hb).subspan(kLengthBytes)).error(), FrameError::kInvalid);
  v1::Envelope share;  // a coalition share announcing more vectors than a digest may name
  share.mutable_coalition()->set_count(5000);
  const auto cb = encodeFrame(share);
  EXPECT_EQ(parseBody(std::span(cb).subspan(kLengthBytes)).error(), FrameError::kInvalid);
  // A statement's digest is SHA-256's 32 bytes, in a round message and in reports alike.
  auto short_digest = roundMessage(1, 1, "");
  short_digest.mutable_round()->set_digest(std::string(8, 'h'));
  const auto sd = encodeFrame(short_digest);
  EXPECT_EQ(parseBody(std::span(sd).subspan(kLengthBytes)).error(), FrameError::kInvalid);
  v1::Envelope report;
  report.mutable_digest()->add_senders(3);
  report.mutable_digest()->add_hashes(std::string(8, 'h'));
  const auto rb = encodeFrame(report);
  EXPECT_EQ(parseBody(std::span(rb).subspan(kLengthBytes)).error(), FrameError::kInvalid);
  report.mutable_digest()->set_hashes(0, std::string(32, 'h'));
  const auto good_report = encodeFrame(report);
  EXPECT_TRUE(parseBody(std::span(good_report).subspan(kLengthBytes)).has_value());
  share.mutable_coalition()->set_count(3);
  const auto ok = encodeFrame(share);
  EXPECT_TRUE(parseBody(std::span(ok).subspan(kLengthBytes)).has_value());
}

TEST(Frame, TruncatedFramesWaitAndNeverParseAsSomethingElse) {
  const auto bytes = encodeFrame(roundMessage(9, 3, std::string(100, 'z')));
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    FrameReader reader(maxFrameBytes(100));
    reader.feed(std::span(bytes).first(cut));
    v1::Envelope e;
    EXPECT_EQ(reader.next(e), false) << cut;
  }
}

TEST(Frame, SharedPayloadFramesParseOnBothPaths) {
  v1::RoundMessage header;
  header.set_round(3);
  header.set_sender(4);
  header.set_sequence(9);
  header.set_kind(v1::RoundMessage::KEYFRAME);
  for (const std::size_t n :
       {std::size_t{0}, std::size_t{1}, std::size_t{200}, std::size_t{70000}}) {
    const std::vector<std::uint8_t> payload(n, 0xab);
    std::vector<std::uint8_t> frame;
    appendRoundFrameHead(header, payload.size(), frame);
    frame.insert(frame.end(), payload.begin(), payload.end());
    // The general parser agrees with the hand-written head.
    FrameReader reader(maxFrameBytes(100000));
    reader.feed(frame);
    v1::Envelope got;
    ASSERT_EQ(reader.next(got), true) << n;
    EXPECT_EQ(got.round().payload(), std::string(n, char(0xab)));
    EXPECT_EQ(got.round().sequence(), 9u);
    // The fast path gives the same message, reusing its object.
    v1::RoundMessage into;
    EXPECT_EQ(parseRoundInto(std::span(frame).subspan(kLengthBytes), into), true);
    EXPECT_EQ(into.SerializeAsString(), got.round().SerializeAsString());
  }
  // Other bodies are left to the general path; broken round bodies are errors.
  v1::Envelope beat;
  beat.mutable_heartbeat()->set_round(1);
  const auto hb = encodeFrame(beat);
  v1::RoundMessage into;
  EXPECT_EQ(parseRoundInto(std::span(hb).subspan(kLengthBytes), into), false);
  const std::vector<std::uint8_t> broken{0x1a, 0x02, 0x20, 0x63};  // kind = 99
  EXPECT_EQ(parseRoundInto(broken, into), std::unexpected(FrameError::kInvalid));
}

TEST(Frame, RoundLayoutFindsThePayloadOnlyWhenItEndsTheBody) {
  v1::RoundMessage header;
  header.set_round(300);
  header.set_sender(2);
  header.set_kind(v1::RoundMessage::DELTA);
  std::vector<std::uint8_t> frame;
  appendRoundFrameHead(header, 100000, frame);
  const std::size_t body = frame.size() - kLengthBytes + 100000;
  const auto head = std::span(frame).subspan(kLengthBytes);
  const auto layout = roundLayout(head, body);
  ASSERT_TRUE(layout.has_value());
  EXPECT_EQ(layout->payload_at, head.size());
  v1::RoundMessage fields;
  ASSERT_TRUE(fields.ParseFromArray(head.data() + layout->fields_at, int(layout->fields_size)));
  EXPECT_EQ(fields.round(), 300u);
  EXPECT_FALSE(roundLayout(head, body + 1).has_value());  // the payload would not end the body
  // A statement (signature, 32-byte digest) is part of the head; a longer digest is not.
  header.set_signature(std::string(64, 's'));
  header.set_digest(std::string(32, 'd'));
  std::vector<std::uint8_t> signed_frame;
  appendRoundFrameHead(header, 100000, signed_frame);
  const auto signed_head = std::span(signed_frame).subspan(kLengthBytes);
  const auto signed_layout = roundLayout(signed_head, signed_frame.size() - kLengthBytes + 100000);
  ASSERT_TRUE(signed_layout.has_value());
  ASSERT_TRUE(fields.ParseFromArray(signed_head.data() + signed_layout->fields_at,
                                    int(signed_layout->fields_size)));
  EXPECT_EQ(fields.digest(), std::string(32, 'd'));
  header.set_digest(std::string(33, 'd'));
  std::vector<std::uint8_t> long_digest;
  appendRoundFrameHead(header, 100000, long_digest);
  EXPECT_FALSE(roundLayout(std::span(long_digest).subspan(kLengthBytes),
                           long_digest.size() - kLengthBytes + 100000)
                   .has_value());
  v1::Envelope beat;
  beat.mutable_heartbeat()->set_round(1);
  const auto hb = encodeFrame(beat);
  EXPECT_FALSE(
      roundLayout(std::span(hb).subspan(kLengthBytes), hb.size() - kLengthBytes).has_value());
}

TEST(Frame, LimitFollowsTheModelDimension) {
  EXPECT_GE(maxFrameBytes(25'600'000), 8u * 25'600'000u);
  EXPECT_LT(maxFrameBytes(10), 8192u);
}

// Random streams: any outcome but a crash (ASan runs this) or an unbounded buffer.
TEST(Frame, RandomStreamsNeverCrash) {
  std::mt19937 rng(77);
  for (int trial = 0; trial < 3000; ++trial) {
    FrameReader reader(4096);
    std::vector<std::uint8_t> chunk(rng() % 300);
    for (auto& b : chunk) b = std::uint8_t(rng());
    if (trial % 3 == 0 && chunk.size() >= 4) {  // a plausible length prefix
      chunk[0] = std::uint8_t(rng() % 200);
      chunk[1] = chunk[2] = chunk[3] = 0;
    }
    reader.feed(chunk);
    v1::Envelope e;
    for (int i = 0; i < 10; ++i) {
      const auto got = reader.next(e);
      if (!got || !*got) break;
    }
    EXPECT_LE(reader.buffered(), 4096u + 300u);
  }
}

TEST(Refusals, OneLabelPerReasonAndEveryGoodbyeMapsToOne) {
  for (std::size_t i = 0; i < kRefusals.entries.size(); ++i) {
    EXPECT_EQ(int(kRefusals.entries[i].value), int(i)) << kRefusals.entries[i].name;
  }
  EXPECT_EQ(refusalName(v1::Goodbye::WRONG_DIGEST), "wrong_digest");
  EXPECT_EQ(refusalName(v1::Goodbye::IDENTITY_MISMATCH), "identity_mismatch");
  // A reason no version defines is a protocol error, not a new label an attacker can mint.
  EXPECT_EQ(refusalName(v1::Goodbye::Reason(77)), "protocol_error");
  EXPECT_EQ(refusalName(v1::Goodbye::REASON_UNSPECIFIED), "protocol_error");
  for (const FrameError e : {FrameError::kEmpty, FrameError::kOversized, FrameError::kMalformed,
                             FrameError::kNoBody, FrameError::kInvalid}) {
    EXPECT_NE(refusalName(e), "unknown");
  }
}

}  // namespace
}  // namespace phalanx::net
