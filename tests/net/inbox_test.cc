// The round inbox and the adaptive deadline on scripted arrivals.
#include "net/inbox.h"

#include <gtest/gtest.h>

#include "net/deadline.h"
#include "net/refusal.h"

namespace phalanx::net {
namespace {

v1::RoundMessage message(std::uint64_t round, std::uint32_t sender, std::string payload = "p") {
  v1::RoundMessage m;
  m.set_round(round);
  m.set_sender(sender);
  m.set_kind(v1::RoundMessage::DELTA);
  m.set_payload(std::move(payload));
  return m;
}

const std::vector<std::uint32_t> kNeighbours{1, 2, 3};

TEST(Inbox, CompletesWhenEveryLiveNeighbourSpoke) {
  RoundInbox inbox(kNeighbours, 10, 4);
  EXPECT_EQ(inbox.add(message(10, 1)), Admission::kAccepted);
  EXPECT_EQ(inbox.add(message(10, 2)), Admission::kAccepted);
  EXPECT_FALSE(inbox.complete(kNeighbours));
  const std::vector<std::uint32_t> live{1, 2};  // 3 crashed
  EXPECT_TRUE(inbox.complete(live));
  const auto got = inbox.close();
  EXPECT_EQ(got.size(), 2u);
  EXPECT_EQ(inbox.openRound(), 11u);
}

TEST(Inbox, FutureRoundsBufferWithinTheWindowStaleOnesDrop) {
  RoundInbox inbox(kNeighbours, 10, 2);
  EXPECT_EQ(inbox.add(message(12, 1)), Admission::kAccepted);
  EXPECT_EQ(inbox.add(message(13, 1)), Admission::kTooFarAhead);
  EXPECT_EQ(inbox.add(message(9, 1)), Admission::kStale);
  inbox.close();                                              // 10
  inbox.close();                                              // 11
  EXPECT_EQ(inbox.heard(), (std::vector<std::uint32_t>{1}));  // round 12 was buffered
  EXPECT_EQ(inbox.heardCount(), 1u);
  EXPECT_EQ(inbox.add(message(11, 2)), Admission::kStale);
  EXPECT_EQ(inbox.counters().stale, 2u);
  EXPECT_EQ(inbox.counters().too_far_ahead, 1u);
}

TEST(Inbox, EquivocationIsCountedAndTheFirstMessageStands) {
  RoundInbox inbox(kNeighbours, 0, 4);
  EXPECT_EQ(inbox.add(message(0, 3, "a")), Admission::kAccepted);
  EXPECT_EQ(inbox.add(message(0, 3, "a")), Admission::kDuplicate);
  EXPECT_EQ(inbox.add(message(0, 3, "b")), Admission::kEquivocation);
  EXPECT_EQ(inbox.add(message(0, 9, "c")), Admission::kUnknownSender);
  EXPECT_EQ(inbox.equivocations().at(3), 1u);
  EXPECT_EQ(inbox.close().at(3).whole().payload(), "a");
  EXPECT_EQ(kRefusals.name(refusalOf(Admission::kEquivocation).value()), "equivocation");
  EXPECT_FALSE(refusalOf(Admission::kDuplicate).has_value());  // a resend is no offence
}

TEST(Inbox, AdvanceHandsOverTheSkippedRoundsInOrder) {
  RoundInbox inbox(kNeighbours, 0, 8);
  inbox.add(message(2, 1));
  inbox.add(message(1, 1));
  inbox.add(message(5, 2));
  const auto skipped = inbox.advanceTo(5);
  EXPECT_EQ(inbox.openRound(), 5u);
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].round(), 1u);
  EXPECT_EQ(skipped[1].round(), 2u);
  EXPECT_EQ(inbox.counters().stale, 0u);  // the caller decides what they are
  EXPECT_EQ(inbox.heard(), (std::vector<std::uint32_t>{2}));
}

TEST(Deadline, FixedUntilEnoughSamplesThenMedianPlusKMad) {
  DeadlineEstimator fixed({.fixed_ms = 500});
  fixed.observe(10);
  EXPECT_EQ(fixed.deadlineMs(), 500);
  DeadlineEstimator adaptive(
      {.fixed_ms = 500, .adaptive = true, .k = 2, .min_ms = 1, .min_samples = 5});
  for (double x : {10.0, 12.0, 11.0, 13.0}) adaptive.observe(x);
  EXPECT_EQ(adaptive.deadlineMs(), 500);  // 4 < 5 samples
  adaptive.observe(1000);                 // one straggler barely moves it
  // median 12, deviations {2, 0, 1, 1, 988}: MAD 1 -> 12 + 2 * 1
  EXPECT_DOUBLE_EQ(adaptive.deadlineMs(), 14);
  DeadlineEstimator clamped({.adaptive = true, .min_ms = 50, .min_samples = 1});
  clamped.observe(1);
  EXPECT_EQ(clamped.deadlineMs(), 50);
}

}  // namespace
}  // namespace phalanx::net
