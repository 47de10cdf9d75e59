#include "base/text.h"

#include <gtest/gtest.h>

namespace phalanx::base {
namespace {

using Items = std::vector<std::string>;

TEST(Split, KeepsEveryItemEmptyOnesIncluded) {
  EXPECT_EQ(splitWords("  ssh -p 2222\t-i key "), (Items{"ssh", "-p", "2222", "-i", "key"}));
  EXPECT_TRUE(splitWords("   ").empty());
  EXPECT_EQ(split("a,b,c", ','), (Items{"a", "b", "c"}));
  EXPECT_EQ(split("a,,b", ','), (Items{"a", "", "b"}));
  EXPECT_EQ(split("a,", ','), (Items{"a", ""}));
  EXPECT_EQ(split("", ','), (Items{""}));
  EXPECT_EQ(split("x=1;y=2", ';'), (Items{"x=1", "y=2"}));
  EXPECT_EQ(split("a,b", ';'), (Items{"a,b"}));
}

TEST(ParseIds, ReadsWholeNumbersBelowTwoToThe32) {
  EXPECT_EQ(parseIds("8,9,3"), (std::vector<std::uint32_t>{8, 9, 3}));
  EXPECT_EQ(parseIds("4294967295"), (std::vector<std::uint32_t>{4294967295u}));
  ASSERT_TRUE(parseIds(""));
  EXPECT_TRUE(parseIds("")->empty());
}

TEST(ParseIds, NamesTheItemThatIsNotAnId) {
  EXPECT_EQ(parseIds("1,x").error(), "'x' is not a node id");
  EXPECT_EQ(parseIds("1,,2").error(), "'' is not a node id");
  EXPECT_EQ(parseIds("3,").error(), "'' is not a node id");
  EXPECT_EQ(parseIds("4294967296").error(), "'4294967296' is not a node id");
  EXPECT_EQ(parseIds("-1").error(), "'-1' is not a node id");
  EXPECT_EQ(parseIds("7a").error(), "'7a' is not a node id");
  EXPECT_EQ(parseIds(" 7").error(), "' 7' is not a node id");
  EXPECT_EQ(parseIds("5-3").error(), "'5-3' is not a node id range (FIRST-LAST)");
  EXPECT_EQ(parseIds("5-").error(), "'5-' is not a node id range (FIRST-LAST)");
  EXPECT_EQ(parseIds("1-2-3").error(), "'1-2-3' is not a node id range (FIRST-LAST)");
  EXPECT_EQ(parseIds("0-4294967295").error(), "'0-4294967295': a range of more than 1048576 ids");
}

TEST(ParseIds, RangesListEveryIdInThem) {
  EXPECT_EQ(parseIds("8,2-4,0"), (std::vector<std::uint32_t>{8, 2, 3, 4, 0}));
  EXPECT_EQ(parseIds("7-7"), (std::vector<std::uint32_t>{7}));
}

TEST(Text, WithIdReplacesEveryPlaceholder) {
  EXPECT_EQ(withId("certs/node-{id}.pem", 7), "certs/node-7.pem");
  EXPECT_EQ(withId("ip netns exec phx{id} -- {id}", 12), "ip netns exec phx12 -- 12");
  EXPECT_EQ(withId("no placeholder", 3), "no placeholder");
}

TEST(ClosestName, FindsTheNameWithinAThirdOfTheWordsLength) {
  const std::vector<std::string> names{"mixing", "model", "momentum", "alie", "nna", "cs_plus"};
  EXPECT_EQ(closestName("mixin", names), "mixing");          // a deletion
  EXPECT_EQ(closestName("momentun", names), "momentum");     // a substitution
  EXPECT_EQ(closestName("alei", names), "alie");             // two neighbours swapped
  EXPECT_EQ(closestName("CS_PLUS2", names), "cs_plus");      // case ignored, an insertion
  EXPECT_EQ(closestName("mixing", names), std::nullopt);     // the name itself is no typo
  EXPECT_EQ(closestName("optimizer", names), std::nullopt);  // nothing close
  EXPECT_EQ(didYouMean("nnaa", names), " (did you mean 'nna'?)");
  EXPECT_EQ(didYouMean("zzz", names), "");
  EXPECT_EQ(closestName("nn", names), std::nullopt);  // too short to guess from
}

}  // namespace
}  // namespace phalanx::base
