// `--json` on the subcommands whose stdout is for people: stdout is then exactly one JSON object
// (what was done, the figures, the files), and what is for people goes to stderr or nowhere.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace phalanx {
namespace {

using testing::phalanxBinary;
using testing::runProcess;
using testing::sourceDir;
namespace fs = std::filesystem;

// Stdout alone (stderr dropped), parsed as one JSON value; the test fails when it is not one.
nlohmann::json stdoutJson(const std::string& command, int want_exit = 0) {
  const auto r = runProcess("(" + command + " 2>/dev/null)");
  EXPECT_EQ(r.exit_code, want_exit) << r.output;
  const auto j = nlohmann::json::parse(r.output, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "not one JSON value:\n" << r.output;
  return j.is_discarded() ? nlohmann::json::object() : j;
}

TEST(JsonOutput, CertsListsTheFilesItWrote) {
  testing::TempDir dir;
  const auto j =
      stdoutJson(phalanxBinary() + " certs " + (dir.path() / "c").string() + " --ids 2,5 --json");
  ASSERT_TRUE(j.contains("nodes"));
  ASSERT_EQ(j["nodes"].size(), 2u);
  EXPECT_EQ(j["nodes"][1]["id"], 5);
  EXPECT_TRUE(fs::exists(j["ca"]["certificate"].get<std::string>()));
  for (const auto& node : j["nodes"]) {
    EXPECT_TRUE(fs::exists(node["certificate"].get<std::string>()));
    EXPECT_TRUE(fs::exists(node["key"].get<std::string>()));
  }
  EXPECT_EQ(j["days"], 825);
}

// The live table goes to stderr; stdout is the summary and the files.
TEST(JsonOutput, LaunchPrintsItsSummaryAsOneObject) {
  testing::TempDir dir;
  const fs::path topology = dir.path() / "t.yaml", out = dir.path() / "run";
  ASSERT_TRUE(testing::generateTopology(
      topology,
      "--kind complete --n 3 --base-port 7840 --metrics-base-port 8140 --byzantine-budget 1"));
  const auto j = stdoutJson(phalanxBinary() + " launch --topology " + topology.string() +
                            " --config " + sourceDir() +
                            "/configs/experiments/smoke-base.yaml --rounds 20 "
                            "--monitor-every 0.2 --json --out " +
                            out.string());
  ASSERT_TRUE(j.contains("summary"));
  EXPECT_EQ(j["summary"]["rounds"], 20);
  EXPECT_TRUE(j["summary"]["crashed"].empty());
  EXPECT_EQ(j["files"]["summary"], (out / "summary.json").string());
  EXPECT_TRUE(fs::exists(j["files"]["report"].get<std::string>()));
}

}  // namespace
}  // namespace phalanx
