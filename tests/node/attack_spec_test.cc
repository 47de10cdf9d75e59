#include "node/attack_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "node/config.h"

namespace phalanx::node {
namespace {

using ::testing::HasSubstr;

TEST(AttackSpec, EveryNameParsesAndReadsBack) {
  for (const auto& e : robust::kAttacks.entries) {
    const auto plain = AttackSpec::parse(e.name);
    ASSERT_TRUE(plain.has_value()) << e.name;
    EXPECT_EQ(plain->kind, Misbehaviour::kVector);
    EXPECT_EQ(plain->vector, e.value);
    EXPECT_FALSE(plain->equivocate);
    EXPECT_EQ(plain->name(), e.name);
    const std::string per_target = "equivocate:" + std::string(e.name);
    const auto equivocating = AttackSpec::parse(per_target);
    ASSERT_TRUE(equivocating.has_value()) << per_target;
    EXPECT_TRUE(equivocating->equivocate);
    EXPECT_EQ(equivocating->vector, e.value);
    EXPECT_EQ(equivocating->name(), per_target);
  }
  for (const auto& e : kMisbehaviours.entries) {
    const auto spec = AttackSpec::parse(e.name);
    ASSERT_TRUE(spec.has_value()) << e.name;
    EXPECT_EQ(spec->kind, e.value);
    EXPECT_EQ(spec->name(), e.name);
  }
}

TEST(AttackSpec, SortsMisbehavioursByLayer) {
  EXPECT_TRUE(AttackSpec::parse("none")->honest());
  EXPECT_TRUE(AttackSpec{}.honest());
  for (const char* wire : {"garbage", "wrong_dim", "replay"}) {
    EXPECT_TRUE(AttackSpec::parse(wire)->wire()) << wire;
    EXPECT_FALSE(AttackSpec::parse(wire)->protocol()) << wire;
  }
  for (const char* protocol : {"stall", "round_lie", "resync_flood", "keyframe_spam"}) {
    EXPECT_TRUE(AttackSpec::parse(protocol)->protocol()) << protocol;
    EXPECT_FALSE(AttackSpec::parse(protocol)->wire()) << protocol;
  }
  EXPECT_FALSE(AttackSpec::parse("alie")->wire());
  EXPECT_FALSE(AttackSpec::parse("alie")->protocol());
}

TEST(AttackSpec, RefusesWhatNoNodeRuns) {
  for (const char* bad :
       {"", "ALIE", "equivocate:", "equivocate:stall", "equivocate:none", "crash", "alie "}) {
    const auto spec = AttackSpec::parse(bad);
    ASSERT_FALSE(spec.has_value()) << bad;
    EXPECT_THAT(spec.error(), HasSubstr("is not something a node can run"));
    EXPECT_THAT(spec.error(), HasSubstr("(vector attacks: "));
  }
  // A typo gets the closest name; "ALIE" is the name itself (case aside), so no guess.
  EXPECT_THAT(AttackSpec::parse("alie ").error(), HasSubstr("(did you mean 'alie'?)"));
  EXPECT_THAT(AttackSpec::parse("signflp").error(), HasSubstr("(did you mean 'signflip'?)"));
  EXPECT_THAT(AttackSpec::parse("crash").error(), ::testing::Not(HasSubstr("did you mean")));
  EXPECT_THAT(AttackSpec::parse("hang").error(), HasSubstr("faults for `phalanx inject`"));
}

TEST(AttackSpec, TheConfigParsesItOnceAndNamesTheField) {
  const Config c = parseConfig("byzantine: {3: {attack: equivocate:opt_foe}}", "c.yaml");
  EXPECT_EQ(c.byzantine.at(3).attack, (AttackSpec{.kind = Misbehaviour::kVector,
                                                  .vector = robust::AttackId::kOptFoe,
                                                  .equivocate = true}));
  try {
    parseConfig("byzantine: {3: {attack: crash}}", "c.yaml");
    ADD_FAILURE() << "crash is an injected fault, not an attack";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("c.yaml: byzantine.3.attack: 'crash' is not something"));
  }
}

}  // namespace
}  // namespace phalanx::node
