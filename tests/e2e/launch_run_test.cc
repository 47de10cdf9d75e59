// A launch run as a library (tools/launch_run.h), its peers the built `phalanx node`: four local
// peers, one a signflip attacker, to the end; the summary names the attacker, no crash, and
// NNA keeps the honest models learning.
#include "tools/launch_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
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
}

}  // namespace
}  // namespace phalanx::tools
