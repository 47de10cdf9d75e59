#include "node/exchange/resync_grants.h"

#include <gtest/gtest.h>

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
