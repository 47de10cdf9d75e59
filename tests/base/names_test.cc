#include "base/names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace phalanx::base {
namespace {

using ::testing::ElementsAre;

enum class Colour { kRed, kGreen, kBlue };
constexpr auto kColours =
    nameTable<Colour>({{Colour::kRed, "red"}, {Colour::kGreen, "green"}, {Colour::kBlue, "blue"}});

TEST(NameTable, ParsesEveryNameAndNamesEveryValue) {
  for (const auto& e : kColours.entries) {
    EXPECT_EQ(kColours.parse(e.name), e.value);
    EXPECT_EQ(kColours.name(e.value), e.name);
  }
  EXPECT_THAT(kColours.names(), ElementsAre("red", "green", "blue"));
}

TEST(NameTable, RefusesWhatItDoesNotList) {
  EXPECT_FALSE(kColours.parse("Red").has_value());  // names are exact, case included
  EXPECT_FALSE(kColours.parse("").has_value());
  EXPECT_FALSE(kColours.contains("purple"));
  EXPECT_EQ(kColours.name(Colour(7)), "unknown");
}

TEST(NameTable, WorksAtCompileTime) {
  static_assert(kColours.parse("green") == Colour::kGreen);
  static_assert(kColours.name(Colour::kBlue) == "blue");
}

}  // namespace
}  // namespace phalanx::base
