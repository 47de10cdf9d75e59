// A launch run as a library (tools/launch_run.h), its peers the built `phalanx node`: four local
// peers, one a signflip attacker, to the end; the summary names the attacker, no crash, and
// NNA keeps the honest models learning.
#include "tools/launch_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace phalanx::tools {
namespace {

namespace fs = std::filesystem;

TEST(LaunchRun, RunsEveryPeerToTheEndAndSummarizesTheRun) {
  ::phalanx::testing::TempDir dir;
  const fs::path topology = dir.path() / "t.yaml", out = dir.path() / "run";
  ASSERT_TRUE(testing::generateTopology(
      topology,
      "--kind complete --n 4 --base-port 7810 --metrics-base-port 8110 --byzantine-budget 1"));
  const int exit =
      runLaunch({.topology = topology.string(),
                 .config = testing::sourceDir() + "/configs/experiments/smoke-base.yaml",
                 .byzantine = "3",
                 .attack = "signflip",
                 .out = out.string(),
                 .rounds = 40,
                 .monitor_every = 0.5,
                 .binary = testing::phalanxPath()});
  ASSERT_EQ(exit, 0);
  std::ifstream in(out / "summary.json");
  const auto summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary["byzantine"].get<std::vector<int>>(), std::vector<int>{3});
  EXPECT_TRUE(summary["crashed"].empty());
  EXPECT_TRUE(summary["diverged"].empty());
  EXPECT_GT(summary["honest_accuracy_min"].get<double>(), 0.8);
  EXPECT_TRUE(fs::exists(out / "report.html"));
  // Secure by default: the peers ran mutual TLS with this run's certificates, and the control
  // token launch made reached them in a file only its owner reads, not on a command line.
  const auto owner_only = fs::perms::owner_read | fs::perms::owner_write;
  EXPECT_EQ(fs::status(out / "certs" / "node-2.key").permissions() & fs::perms::all, owner_only);
  EXPECT_EQ(fs::status(out / "control.token").permissions() & fs::perms::all, owner_only);
  std::ifstream token_file(out / "control.token");
  std::string token;
  std::getline(token_file, token);
  ASSERT_EQ(token.size(), 32u);
  for (const char* file : {"command.txt", "report.html", "stdout-0.log", "node-0.log"}) {
    std::ifstream f(out / file);
    const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
    EXPECT_EQ(text.find(token), std::string::npos) << file;
  }
  std::ifstream log(out / "node-0.log");
  const std::string node_log{std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>()};
  EXPECT_EQ(node_log.find("security: none"), std::string::npos);
}

TEST(LaunchRun, SecurityNoneIsSaidAloudAtEveryPeersStart) {
  ::phalanx::testing::TempDir dir;
  const fs::path topology = dir.path() / "t.yaml", out = dir.path() / "run";
  ASSERT_TRUE(testing::generateTopology(
      topology,
      "--kind complete --n 2 --base-port 7760 --metrics-base-port 8160 --byzantine-budget 0"));
  ASSERT_EQ(runLaunch({.topology = topology.string(),
                       .config = testing::sourceDir() + "/configs/experiments/smoke-base.yaml",
                       .out = out.string(),
                       .rounds = 5,
                       .sets = {"security.mode=none"},
                       .monitor_every = 0.5,
                       .binary = testing::phalanxPath()}),
            0);
  EXPECT_FALSE(fs::exists(out / "certs"));
  std::ifstream log(out / "node-1.log");
  const std::string node_log{std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>()};
  EXPECT_NE(node_log.find("security: none — peers are not authenticated"), std::string::npos);
}

}  // namespace
}  // namespace phalanx::tools
