// `phalanx config show|reference` and the command line's typo hints, as a user meets them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/process.h"

namespace phalanx {
namespace {

using ::testing::HasSubstr;
using testing::phalanxBinary;
using testing::runProcess;
using testing::sourceDir;

TEST(ConfigCli, ShowPrintsTheResolvedConfigAsYamlOrJson) {
  const std::string config = sourceDir() + "/configs/demo.yaml";
  const auto yaml = runProcess(phalanxBinary() + " config show " + config +
                               " --set rounds.count=7 --log-level warn");
  ASSERT_EQ(yaml.exit_code, 0) << yaml.output;
  EXPECT_THAT(yaml.output, HasSubstr("rounds:\n  count: 7\n"));   // --set
  EXPECT_THAT(yaml.output, HasSubstr("  deadline_min_ms: 5\n"));  // a default
  EXPECT_THAT(yaml.output, HasSubstr("  codec: topk\n"));         // from the file
  const auto json = runProcess(phalanxBinary() + " config show " + config + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  const auto j = nlohmann::json::parse(json.output);
  EXPECT_EQ(j["rounds.count"], 600);
  EXPECT_EQ(j["compression.gamma"], 0.2);
  EXPECT_EQ(j["mixing.rule"], "nna");
  EXPECT_EQ(j["model.hidden"], nlohmann::json::array({100}));
  // A typo in the file: exit 2, the file, the field and the closest name.
  const auto bad = runProcess(phalanxBinary() + " config show " + config + " --set mixing.rul=nna");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.output, HasSubstr("mixing.rul: unknown field (did you mean 'rule'?)"));
  // In the one log format (base/log_format.h): time, level, who, message.
  EXPECT_THAT(bad.output.substr(0, bad.output.find('\n')),
              ::testing::MatchesRegex("[0-9-]+T[0-9:.]+ error phalanx: .*"));
}

TEST(ConfigCli, ShowRedactsTheControlTokenUnlessAskedFor) {
  const std::string config = sourceDir() + "/configs/demo.yaml";
  const std::string set = " --set control.token=s3cret-value";
  const auto yaml = runProcess(phalanxBinary() + " config show " + config + set);
  ASSERT_EQ(yaml.exit_code, 0) << yaml.output;
  EXPECT_THAT(yaml.output, HasSubstr("token: <redacted>"));
  EXPECT_THAT(yaml.output, ::testing::Not(HasSubstr("s3cret-value")));
  const auto json = runProcess(phalanxBinary() + " config show " + config + set + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_EQ(nlohmann::json::parse(json.output)["control.token"], "<redacted>");
  const auto shown =
      runProcess(phalanxBinary() + " config show " + config + set + " --show-secrets");
  EXPECT_THAT(shown.output, HasSubstr("s3cret-value"));
  // No token: nothing to hide, and the empty value stays what it is.
  const auto none = runProcess(phalanxBinary() + " config show " + config + " --json");
  EXPECT_EQ(nlohmann::json::parse(none.output)["control.token"], "");
}

TEST(ConfigCli, MistypedOptionsSubcommandsAndAttacksGetTheClosestNameAndExit2) {
  const std::string args = " --topology " + sourceDir() + "/topologies/ring-8.yaml --config " +
                           sourceDir() + "/configs/demo.yaml --out /nonexistent/never";
  auto r = runProcess(phalanxBinary() + " simulate" + args + " --rouns 3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("did you mean --rounds?"));
  r = runProcess(phalanxBinary() + " simulat");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("did you mean `phalanx simulate`?"));
  // --attack is checked before anything starts, and needs --byzantine.
  r = runProcess(phalanxBinary() + " launch" + args + " --byzantine 3 --attack alei");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("'alei' is not something a node can run (did you mean 'alie'?)"));
  r = runProcess(phalanxBinary() + " launch" + args + " --attack alie");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--attack requires --byzantine"));
}

}  // namespace
}  // namespace phalanx
