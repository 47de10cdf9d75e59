// The exchange modes' helpers (node/exchange/): keyframes granted on request, EF21-W's scaling.
#include <gtest/gtest.h>

#include "node/exchange/resync_grants.h"
#include "node/exchange/wire_scaling.h"

namespace phalanx::node {
namespace {

TEST(ResyncGrants, TheFirstAtOnceThenTheGapDoublesUpTo128AndAQuietPeerStartsOver) {
  ResyncGrants g;
  EXPECT_TRUE(g.grant(3, 0));
  EXPECT_FALSE(g.grant(3, 5));  // within 16 rounds: throttled
  EXPECT_TRUE(g.grant(7, 5));   // another neighbour has its own schedule
  EXPECT_FALSE(g.grant(3, 15));
  EXPECT_TRUE(g.grant(3, 16));  // next gap 32
  EXPECT_FALSE(g.grant(3, 47));
  EXPECT_TRUE(g.grant(3, 48));  // next gap 64
  EXPECT_FALSE(g.grant(3, 111));
  EXPECT_TRUE(g.grant(3, 112));  // next gap 128
  EXPECT_TRUE(g.grant(3, 240));  // and 128 from then on
  EXPECT_FALSE(g.grant(3, 367));
  EXPECT_TRUE(g.grant(3, 368));
  // A flood for 10,000 rounds costs at most one keyframe per 128 rounds.
  int granted = 0;
  for (std::uint64_t t = 369; t < 10369; ++t) granted += g.grant(3, t);
  EXPECT_LE(granted, 10000 / 128 + 1);
  // Quiet for 128 rounds past its next grant: served at once and at 16 again.
  ResyncGrants quiet;
  EXPECT_TRUE(quiet.grant(1, 0));
  EXPECT_TRUE(quiet.grant(1, 16));   // next 48
  EXPECT_TRUE(quiet.grant(1, 500));  // 500 >= 48 + 128: starts over
  EXPECT_FALSE(quiet.grant(1, 515));
  EXPECT_TRUE(quiet.grant(1, 516));
}

}  // namespace
}  // namespace phalanx::node

namespace phalanx::node {
namespace {

// EF21-W with peer 0 holding a tenth of four peers' samples: it sends m / (4 · 0.1) and reads
// peer j's replica times 4·w_j; what it mixes as its own is what the others read of it.
TEST(WireScaling, PublishesOverNwAndReadsTimesNw) {
  WireScaling inactive;
  EXPECT_FALSE(inactive.active());
  const std::vector<float> v{1, -2};
  EXPECT_EQ(inactive.wire(v).data(), v.data());  // the identity, no copy
  EXPECT_FALSE(inactive.scaleOf(3));
  WireScaling w(2.5f, {{0, 0.4f}, {1, 1.2f}, {2, 1.2f}, {3, 1.2f}});
  EXPECT_TRUE(w.active());
  const auto wire = w.wire(v);
  EXPECT_FLOAT_EQ(wire[0], 2.5f);
  EXPECT_FLOAT_EQ(wire[1], -5.0f);
  EXPECT_EQ(w.scaleOf(1), std::optional<float>(1.2f));
  EXPECT_FALSE(w.scaleOf(9));
  w.setOwn(wire);  // the replica of what it published
  EXPECT_FLOAT_EQ(w.own()[0], 1.0f);
  EXPECT_FLOAT_EQ(w.own()[1], -2.0f);
}

}  // namespace
}  // namespace phalanx::node
