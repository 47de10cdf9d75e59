#include "node/fault_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace phalanx::node {
namespace {

using ::testing::HasSubstr;

TEST(FaultCommand, ParsesEveryVerbIntoItsType) {
  EXPECT_TRUE(std::holds_alternative<fault::Crash>(*parseFaultCommand("crash")));
  EXPECT_TRUE(std::holds_alternative<fault::Heal>(*parseFaultCommand("heal")));
  EXPECT_TRUE(std::holds_alternative<fault::Restart>(*parseFaultCommand("restart")));
  EXPECT_EQ(std::get<fault::Hang>(*parseFaultCommand("hang 2.5")).seconds, 2.5);
  EXPECT_EQ(std::get<fault::Slow>(*parseFaultCommand("slow 300")).by.count(), 300);
  // Milliseconds are whole: a fraction is cut off, as the node always did.
  EXPECT_EQ(std::get<fault::Delay>(*parseFaultCommand("delay 7.9")).by.count(), 7);
  EXPECT_EQ(std::get<fault::Drop>(*parseFaultCommand("drop 0.25")).probability, 0.25);
  EXPECT_EQ(std::get<fault::Corrupt>(*parseFaultCommand("corrupt 1")).probability, 1.0);
  EXPECT_EQ(std::get<fault::Partition>(*parseFaultCommand("partition 3,7")).peers,
            (std::vector<std::uint32_t>{3, 7}));
  const auto attack = std::get<fault::SwitchAttack>(*parseFaultCommand("attack equivocate:alie"));
  EXPECT_EQ(attack.attack.name(), "equivocate:alie");
  EXPECT_TRUE(std::get<fault::SwitchAttack>(*parseFaultCommand("attack none")).attack.honest());
  EXPECT_TRUE(std::get<fault::SwitchAttack>(*parseFaultCommand("attack stall")).attack.protocol());
  // Surrounding blanks are no error.
  EXPECT_TRUE(std::holds_alternative<fault::Heal>(*parseFaultCommand("  heal \n")));
}

TEST(FaultCommand, RefusesWhatANodeCouldNotApplyWithTheReason) {
  EXPECT_THAT(parseFaultCommand("explode").error(), HasSubstr("unknown fault 'explode'"));
  EXPECT_THAT(parseFaultCommand("").error(), HasSubstr("unknown fault ''"));
  EXPECT_THAT(parseFaultCommand("drop 2").error(), HasSubstr("[0, 1]"));
  EXPECT_THAT(parseFaultCommand("drop").error(), HasSubstr("got ''"));
  EXPECT_THAT(parseFaultCommand("slow 10ms").error(), HasSubstr("got '10ms'"));
  EXPECT_THAT(parseFaultCommand("hang -1").error(), HasSubstr("[0, 3600]"));
  EXPECT_THAT(parseFaultCommand("corrupt nan").error(), HasSubstr("[0, 1]"));
  EXPECT_THAT(parseFaultCommand("partition x").error(), HasSubstr("not a node id"));
  EXPECT_THAT(parseFaultCommand("partition").error(), HasSubstr("partition"));
  EXPECT_THAT(parseFaultCommand("attack").error(), HasSubstr("expected a name"));
  EXPECT_THAT(parseFaultCommand("attack frobnicate").error(), HasSubstr("frobnicate"));
  // A wire attack changes what the node is, not what it does this round: not switchable.
  EXPECT_THAT(parseFaultCommand("attack garbage").error(), HasSubstr("not switchable"));
  EXPECT_THAT(parseFaultCommand("attack labelflip").error(), HasSubstr("not switchable"));
  // Words beyond the command's are a typo, not something to drop silently.
  EXPECT_THAT(parseFaultCommand("drop 0.1 0.2").error(), HasSubstr("unexpected '0.2'"));
  EXPECT_THAT(parseFaultCommand("crash now").error(), HasSubstr("unexpected 'now'"));
}

TEST(FaultCommand, ItsTextParsesBackToTheSameCommand) {
  for (const char* text : {"crash", "hang 1.5", "slow 300", "delay 7", "drop 0.3", "corrupt 0.01",
                           "partition 1,4,9", "heal", "attack alie", "attack equivocate:ipm",
                           "attack none", "attack round_lie", "restart"}) {
    const auto parsed = parseFaultCommand(text);
    ASSERT_TRUE(parsed) << text << ": " << parsed.error();
    EXPECT_EQ(faultText(*parsed), text);
    EXPECT_EQ(faultText(*parseFaultCommand(faultText(*parsed))), text);
  }
}

}  // namespace
}  // namespace phalanx::node
