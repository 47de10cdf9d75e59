#include "base/yaml_fields.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace phalanx::base {
namespace {

// The message the caller's exception carries: "field: problem".
std::string failure(const std::string& yaml, const std::function<void(YamlFields&)>& read) {
  YamlFields f(YAML::Load(yaml), "sec", [](const std::string& field, const std::string& problem) {
    throw std::runtime_error(field + ": " + problem);
  });
  try {
    read(f);
    f.finish();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(YamlFields, ReadsWhatIsAskedWithinRange) {
  std::uint64_t n = 0;
  double x = 0;
  std::string rule;
  EXPECT_EQ(failure("{n: 3, x: 0.5, rule: nna}",
                    [&](YamlFields& f) {
                      f.integer("n", n, 1, 10);
                      f.number("x", x, 0, 1);
                      f.choice("rule", rule, {"mean", "nna"});
                    }),
            "");
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(x, 0.5);
  EXPECT_EQ(rule, "nna");
}

TEST(YamlFields, NamesTheFieldAndTheProblem) {
  std::uint64_t n = 0;
  std::string rule;
  EXPECT_EQ(failure("{n: 11}", [&](YamlFields& f) { f.integer("n", n, 1, 10); }),
            "sec.n: 11 is outside [1, 10]");
  EXPECT_EQ(failure("{n: -1}", [&](YamlFields& f) { f.integer("n", n, 0, 10); }),
            "sec.n: -1 is outside [0, 10]");
  EXPECT_EQ(failure("{n: [1]}", [&](YamlFields& f) { f.integer("n", n, 0, 10); }),
            "sec.n: expected a whole number, got a list");
  EXPECT_EQ(failure("{rule: krum}", [&](YamlFields& f) { f.choice("rule", rule, {"nna"}); }),
            "sec.rule: unknown value 'krum' (allowed: nna)");
  EXPECT_EQ(failure("{n: 1, m: 2}", [&](YamlFields& f) { f.integer("n", n, 0, 10); }),
            "sec.m: unknown field (allowed here: n)");
}

enum class Side { kLeft, kRight };
constexpr auto kSides = nameTable<Side>({{Side::kLeft, "left"}, {Side::kRight, "right"}});

TEST(YamlFields, ReadsAChoiceIntoItsEnum) {
  Side side = Side::kLeft;
  EXPECT_EQ(failure("{side: right}", [&](YamlFields& f) { f.choice("side", side, kSides); }), "");
  EXPECT_EQ(side, Side::kRight);
  side = Side::kRight;
  EXPECT_EQ(failure("{}", [&](YamlFields& f) { f.choice("side", side, kSides); }), "");
  EXPECT_EQ(side, Side::kRight);  // absent: the default stands
  EXPECT_EQ(failure("{side: up}", [&](YamlFields& f) { f.choice("side", side, kSides); }),
            "sec.side: unknown value 'up' (allowed: left, right)");
  EXPECT_EQ(side, Side::kRight);
}

TEST(YamlFields, RefusesAKeyGivenTwice) {
  std::uint64_t n = 0;
  EXPECT_EQ(failure("n: 1\nn: 2\n", [&](YamlFields& f) { f.integer("n", n, 0, 10); }),
            "sec.n: given twice in the same section");
}

}  // namespace
}  // namespace phalanx::base
