// The colluders' bookkeeping (node/adversary/coalition.h): who may share, when a round's shares are
// whole, what is pooled, who leads.
#include "node/adversary/coalition.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace phalanx::node {
namespace {

// The messages `from` would send, taken by `book`; false when any was refused.
bool takeAll(CoalitionBook& book, std::uint32_t from, const std::vector<net::v1::Envelope>& all) {
  bool ok = true;
  for (const auto& e : all) ok = book.take(from, e.coalition()) && ok;
  return ok;
}

TEST(Coalition, PoolsWholeSharesFromFellowsOnly) {
  CoalitionBook book({7, 3}, 2);
  EXPECT_EQ(book.fellows(), (std::vector<std::uint32_t>{3, 7}));
  const std::vector<float> a{1, 2}, b{3, 4};
  const std::vector<std::uint32_t> ids{0, 1};
  const std::vector<std::span<const float>> rows{a, b};
  const auto two = CoalitionBook::shares(4, ids, rows);
  ASSERT_EQ(two.size(), 2u);
  const std::vector<std::uint32_t> live{3, 7};
  EXPECT_FALSE(book.take(9, two[0].coalition()));  // not a fellow
  EXPECT_TRUE(book.take(3, two[0].coalition()));
  EXPECT_FALSE(book.sharesComplete(4, live));  // half of 3's share, nothing from 7
  EXPECT_TRUE(book.take(3, two[1].coalition()));
  EXPECT_FALSE(book.sharesComplete(4, live));
  EXPECT_TRUE(book.sharesComplete(4, std::vector<std::uint32_t>{3}));  // 7 is down
  // 7 heard nothing: a count-0 marker completes its share.
  EXPECT_TRUE(takeAll(book, 7, CoalitionBook::shares(4, {}, {})));
  EXPECT_TRUE(book.sharesComplete(4, live));
  EXPECT_EQ(book.pooled(4).at(0), a);
  EXPECT_EQ(book.pooled(4).at(1), b);
  EXPECT_TRUE(book.pooled(5).empty());
}

TEST(Coalition, RefusesBadPayloadsAndRoundsOutsideTheWindow) {
  CoalitionBook book({3}, 2);
  const std::vector<float> wrong{1, 2, 3}, nan{std::numeric_limits<float>::quiet_NaN(), 0};
  const std::vector<std::uint32_t> one{0};
  EXPECT_FALSE(takeAll(book, 3, CoalitionBook::shares(1, one, {{std::span<const float>(wrong)}})));
  EXPECT_FALSE(takeAll(book, 3, CoalitionBook::shares(1, one, {{std::span<const float>(nan)}})));
  net::v1::Envelope garbage = CoalitionBook::craftedMessage(1, std::vector<float>{1, 2});
  garbage.mutable_coalition()->set_payload("not a message");
  EXPECT_FALSE(book.take(3, garbage.coalition()));
  book.advance(10);  // keeps rounds 8 to 16
  const std::vector<float> v{1, 2};
  EXPECT_FALSE(book.take(3, CoalitionBook::craftedMessage(7, v).coalition()));
  EXPECT_FALSE(book.take(3, CoalitionBook::craftedMessage(17, v).coalition()));
  EXPECT_TRUE(book.take(3, CoalitionBook::craftedMessage(8, v).coalition()));
  ASSERT_NE(book.crafted(8), nullptr);
  EXPECT_EQ(*book.crafted(8), v);
  EXPECT_EQ(book.crafted(9), nullptr);
  // Per target: kept apart from the vector for everyone.
  const std::vector<float> w{5, 6};
  EXPECT_FALSE(book.anyCrafted(9));
  EXPECT_TRUE(book.take(3, CoalitionBook::craftedMessage(9, w, 4).coalition()));
  EXPECT_TRUE(book.anyCrafted(9));
  EXPECT_EQ(book.crafted(9), nullptr);
  ASSERT_NE(book.crafted(9, 4), nullptr);
  EXPECT_EQ(*book.crafted(9, 4), w);
  EXPECT_EQ(book.crafted(9, 5), nullptr);
}

TEST(Coalition, TheLowestLiveIdLeads) {
  CoalitionBook book({2, 9}, 1);
  EXPECT_EQ(book.leader(5, std::vector<std::uint32_t>{2, 9}), 2u);
  EXPECT_EQ(book.leader(5, std::vector<std::uint32_t>{9}), 5u);
  EXPECT_EQ(book.leader(1, std::vector<std::uint32_t>{2, 9}), 1u);
}

}  // namespace
}  // namespace phalanx::node
