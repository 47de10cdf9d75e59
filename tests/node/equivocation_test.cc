// EquivocationDetector: conviction needs more than b disagreeing reporters for one round; lies
// by up to b reporters convict nobody; rounds outside the window are forgotten.
#include "node/equivocation.h"

#include <gtest/gtest.h>

#include <vector>

namespace phalanx::node {
namespace {

TEST(Equivocation, DigestIsOfTheBytes) {
  const std::vector<float> a{1.0f, 2.0f}, b{1.0f, 2.0f}, c{1.0f, 2.0000002f};
  EXPECT_EQ(vectorDigest(a), vectorDigest(b));
  EXPECT_NE(vectorDigest(a), vectorDigest(c));
  const std::vector<float> zero{0.0f}, negative_zero{-0.0f};
  EXPECT_NE(vectorDigest(zero), vectorDigest(negative_zero));  // bit for bit, not by value
}

TEST(Equivocation, MoreThanBDisagreeingReportersConvict) {
  EquivocationDetector d(/*budget=*/2);
  EXPECT_FALSE(d.own(5, /*sender=*/9, 111));
  EXPECT_FALSE(d.report(1, 5, 9, 111));  // agrees
  EXPECT_FALSE(d.report(2, 5, 9, 222));
  EXPECT_FALSE(d.report(3, 5, 9, 333));
  EXPECT_FALSE(d.report(3, 5, 9, 444));  // a second report from 3 for the round is ignored
  EXPECT_FALSE(d.convicted(9));
  EXPECT_TRUE(d.report(4, 5, 9, 222));  // the third disagreement: b + 1
  EXPECT_TRUE(d.convicted(9));
  EXPECT_EQ(d.equivocations().at(9), 1u);
  EXPECT_FALSE(d.report(6, 5, 9, 555));  // one count per round
  EXPECT_EQ(d.equivocations().at(9), 1u);
}

TEST(Equivocation, ReportsBeforeTheOwnDigestCountWhenItComes) {
  EquivocationDetector d(1);
  EXPECT_FALSE(d.report(1, 3, 7, 10));
  EXPECT_FALSE(d.report(2, 3, 7, 10));
  EXPECT_TRUE(d.own(3, 7, 20));
}

TEST(Equivocation, BLiarsCannotFrameAnHonestSender) {
  EquivocationDetector d(2);
  for (std::uint64_t round = 0; round < 50; ++round) {
    d.advance(round);
    d.own(round, 4, 1000 + round);
    d.report(/*liar*/ 8, round, 4, 1);
    d.report(/*liar*/ 9, round, 4, 2);
    d.report(/*honest*/ 1, round, 4, 1000 + round);
  }
  EXPECT_FALSE(d.convicted(4));
  EXPECT_TRUE(d.equivocations().empty());
}

TEST(Equivocation, OutsideTheWindowIsIgnored) {
  EquivocationDetector d(0, /*window=*/4);
  d.advance(100);
  EXPECT_FALSE(d.own(90, 1, 5));
  EXPECT_FALSE(d.report(2, 90, 1, 6));   // too old
  EXPECT_FALSE(d.report(2, 200, 1, 6));  // too far ahead
  EXPECT_FALSE(d.own(200, 1, 5));
  EXPECT_FALSE(d.convicted(1));
  EXPECT_FALSE(d.report(2, 5, 2, 2));  // reporter about itself: ignored
  EXPECT_FALSE(d.report(2, 100, 2, 2));
}

}  // namespace
}  // namespace phalanx::node
