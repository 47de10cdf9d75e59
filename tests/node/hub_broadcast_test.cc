// HubBroadcast (ALGORITHMS.md §3.6): the hub's error-feedback recurrence
// e_{t+1} = e_t + G_t − C(e_t + G_t) by hand, the dense broadcast that is the aggregate
// exactly, messages that decode to the update the hub applies, refusals, and a checkpoint
// round trip that continues bit-identically.
#include "node/exchange/hub_broadcast.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "compress/decode.h"

namespace phalanx::node {
namespace {

using ::testing::ElementsAre;

std::vector<float> copy(std::span<const float> v) { return {v.begin(), v.end()}; }

BroadcastConfig topOne() {  // top-1 of 4 values
  return {.codec = compress::CodecId::kTopk,
          .density = 0.25,
          .feedback = compress::FeedbackKind::kEf14};
}

TEST(HubBroadcast, ErrorFeedbackRecurrenceByHand) {
  HubBroadcast hub(topOne(), 4, {{4, 1}}, 1);
  // t = 0: p = e + G = (1, -3, 2, 0.5); C(p) keeps -3; e = p - C(p).
  auto q = hub.encode(std::vector<float>{1, -3, 2, 0.5});
  ASSERT_TRUE(q) << q.error();
  EXPECT_THAT(copy(hub.update()), ElementsAre(0, -3, 0, 0));
  EXPECT_THAT(copy(hub.error()), ElementsAre(1, 0, 2, 0.5));
  // t = 1: p = (1, 0, 2, 0.5) + (1, 1, 1, 1) = (2, 1, 3, 1.5); C(p) keeps 3.
  q = hub.encode(std::vector<float>{1, 1, 1, 1});
  ASSERT_TRUE(q);
  EXPECT_THAT(copy(hub.update()), ElementsAre(0, 0, 3, 0));
  EXPECT_THAT(copy(hub.error()), ElementsAre(2, 1, 0, 1.5));
  // What a leaf decodes is the update the hub applies.
  std::vector<float> leaf(4);
  ASSERT_TRUE(compress::decode(*q, leaf));
  EXPECT_EQ(leaf, copy(hub.update()));
}

TEST(HubBroadcast, WithoutFeedbackTheErrorIsDropped) {
  BroadcastConfig c = topOne();
  c.feedback = compress::FeedbackKind::kNone;
  HubBroadcast hub(c, 4, {{4, 1}}, 1);
  ASSERT_TRUE(hub.encode(std::vector<float>{1, -3, 2, 0.5}));
  ASSERT_TRUE(hub.encode(std::vector<float>{1, 0.5, 1.5, 1}));
  EXPECT_THAT(copy(hub.update()), ElementsAre(0, 0, 1.5, 0));  // not 3: the 2 left out is gone
  EXPECT_TRUE(hub.error().empty());
}

TEST(HubBroadcast, DenseBroadcastIsTheAggregateExactly) {
  HubBroadcast hub({}, 3, {{3, 1}}, 1);
  const std::vector<float> g{0.1f, -2.5f, 1e-7f};
  auto q = hub.encode(g);
  ASSERT_TRUE(q);
  EXPECT_EQ(copy(hub.update()), g);
  std::vector<float> leaf(3);
  ASSERT_TRUE(compress::decode(*q, leaf));
  EXPECT_EQ(leaf, g);
}

TEST(HubBroadcast, RefusesNonFiniteAndWrongSizedAggregatesAndKeepsItsState) {
  HubBroadcast hub(topOne(), 4, {{4, 1}}, 1);
  ASSERT_TRUE(hub.encode(std::vector<float>{1, -3, 2, 0.5}));
  EXPECT_FALSE(hub.encode(std::vector<float>{1, NAN, 0, 0}));
  EXPECT_FALSE(hub.encode(std::vector<float>{1, 2}));
  EXPECT_THAT(copy(hub.update()), ElementsAre(0, -3, 0, 0));
  EXPECT_THAT(copy(hub.error()), ElementsAre(1, 0, 2, 0.5));
}

TEST(HubBroadcast, CheckpointRoundTripContinuesBitIdentically) {
  HubBroadcast a(topOne(), 4, {{4, 1}}, 1);
  ASSERT_TRUE(a.encode(std::vector<float>{1, -3, 2, 0.5}));
  train::Checkpoint c;
  a.save(c);
  HubBroadcast b(topOne(), 4, {{4, 1}}, 1);
  b.restore(c);
  const std::vector<float> next{0.25f, 1, -1, 4};
  ASSERT_TRUE(a.encode(next));
  ASSERT_TRUE(b.encode(next));
  EXPECT_EQ(copy(a.update()), copy(b.update()));
  EXPECT_EQ(copy(a.error()), copy(b.error()));
  train::Checkpoint wrong;
  wrong.putFloats("hub.broadcast.update", std::vector<float>(3));
  EXPECT_THROW(b.restore(wrong), train::CheckpointError);
}

}  // namespace
}  // namespace phalanx::node
