// `phalanx experiment` on the CI-sized grid (configs/experiments/smoke.yaml): every cell runs as
// a real launch, results.csv/results.md/plots come out, --filter narrows, --resume skips, SIGTERM
// stops.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace phalanx {
namespace {

using ::testing::HasSubstr;
using testing::phalanxBinary;
using testing::runProcess;
using testing::sourceDir;
namespace fs = std::filesystem;

std::vector<std::vector<std::string>> csv(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> row;
    std::stringstream cells(line);
    for (std::string c; std::getline(cells, c, ',');) row.push_back(c);
    rows.push_back(row);
  }
  return rows;
}

TEST(ExperimentCli, SmokeGridRunsFiltersAndResumes) {
  testing::TempDir dir;
  const std::string run = phalanxBinary() + " experiment --grid " + sourceDir() +
                          "/configs/experiments/smoke.yaml --base-port 21000 --jobs 2 --out " +
                          (dir.path() / "all").string();
  const auto first = runProcess(run);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const auto rows = csv(dir.path() / "all" / "results.csv");
  ASSERT_EQ(rows.size(), 5u);
  ASSERT_GE(rows[0].size(), 12u);
  EXPECT_EQ(rows[0][0], "attack");
  EXPECT_EQ(rows[0][1], "rule");
  EXPECT_EQ(rows[0][3], "final_acc_mean");
  double nna = 0, mean = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][2], "ok") << rows[i][0] << " " << rows[i][1];
    if (rows[i][0] == "signflip") (rows[i][1] == "nna" ? nna : mean) = std::stod(rows[i][3]);
  }
  std::printf("smoke grid: signflip, final honest accuracy nna %.4f, mean %.4f\n", nna, mean);
  EXPECT_GT(nna, 0.8);
  EXPECT_LT(mean, 0.5);
  std::ifstream md(dir.path() / "all" / "results.md");
  const std::string text{std::istreambuf_iterator<char>(md), {}};
  EXPECT_THAT(text, HasSubstr("| attack | nna | mean |"));
  EXPECT_TRUE(fs::exists(dir.path() / "all" / "plots" / "accuracy-signflip.svg"));

  // --resume: every cell is done, nothing runs again, the same table comes out — also when the
  // run folders are gone and only the cells' records are left (how results outlive a session).
  const auto table = csv(dir.path() / "all" / "results.csv");
  for (const auto& cell : fs::directory_iterator(dir.path() / "all" / "cells"))
    fs::remove_all(cell.path() / "run");
  fs::remove(dir.path() / "all" / "plots" / "accuracy-signflip.svg");
  const auto again = runProcess(run + " --resume");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_THAT(again.output, HasSubstr("4 cells, 0 to run"));
  EXPECT_EQ(csv(dir.path() / "all" / "results.csv"), table);
  EXPECT_TRUE(fs::exists(dir.path() / "all" / "plots" /
                         "accuracy-signflip.svg"));  // the curves are kept too
  // --report-only: the same tables again, and a cell without a record is reported as not run
  // (exit 1), not run.
  fs::remove_all(dir.path() / "all" / "cells" / "attack-none_rule-mean");
  const auto report = runProcess(run + " --report-only");
  EXPECT_EQ(report.exit_code, 1) << report.output;
  EXPECT_THAT(report.output, HasSubstr("4 cells, 0 to run"));
  EXPECT_FALSE(fs::exists(dir.path() / "all" / "cells" / "attack-none_rule-mean"));
  std::ifstream md2(dir.path() / "all" / "results.md");
  EXPECT_THAT(std::string(std::istreambuf_iterator<char>(md2), {}),
              HasSubstr("4 cells (3 ok, 0 failed, 1 did not run)"));
  // --json: stdout is one object, the files and every cell's record.
  const auto as_json = runProcess("(" + run + " --report-only --json 2>/dev/null)");
  EXPECT_EQ(as_json.exit_code, 1);
  const auto j = nlohmann::json::parse(as_json.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << as_json.output;
  EXPECT_FALSE(j["all_ran"].get<bool>());
  EXPECT_EQ(j["files"]["csv"], (dir.path() / "all" / "results.csv").string());
  ASSERT_EQ(j["cells"].size(), 4u);
  std::size_t ok = 0;
  for (const auto& cell : j["cells"]) ok += cell["status"] == "ok";
  EXPECT_EQ(ok, 3u);

  const auto filtered = runProcess(
      phalanxBinary() + " experiment --grid " + sourceDir() +
      "/configs/experiments/smoke.yaml --base-port 21000 --filter attack=signflip --filter "
      "rule=mean --out " +
      (dir.path() / "one").string());
  ASSERT_EQ(filtered.exit_code, 0) << filtered.output;
  EXPECT_EQ(csv(dir.path() / "one" / "results.csv").size(), 2u);
  // Another part of the grid into the same folder: the report covers both parts (grid order),
  // not only the cell this run was filtered to.
  const auto other = runProcess(phalanxBinary() + " experiment --grid " + sourceDir() +
                                "/configs/experiments/smoke.yaml --base-port 21000 --filter "
                                "attack=none --filter rule=mean --resume --out " +
                                (dir.path() / "one").string());
  ASSERT_EQ(other.exit_code, 0) << other.output;
  const auto both = csv(dir.path() / "one" / "results.csv");
  ASSERT_EQ(both.size(), 3u);
  EXPECT_EQ(both[1][0], "none");
  EXPECT_EQ(both[2][0], "signflip");
  const auto bad = runProcess(phalanxBinary() + " experiment --grid " + sourceDir() +
                              "/configs/experiments/smoke.yaml --filter colour=red --out " +
                              (dir.path() / "x").string());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.output, HasSubstr("the grid has no axis 'colour'"));
  // A folder it cannot make (here a file in the way) is one line and exit 1, not an abort.
  std::ofstream(dir.path() / "blocked");
  const auto blocked = runProcess(phalanxBinary() + " experiment --grid " + sourceDir() +
                                  "/configs/experiments/smoke.yaml --out " +
                                  (dir.path() / "blocked" / "out").string());
  EXPECT_EQ(blocked.exit_code, 1) << blocked.output;
  EXPECT_THAT(blocked.output, HasSubstr("blocked/out"));
}

TEST(ExperimentCli, SigtermStopsTheRunningCellsAndResumeRunsThemAgain) {
  testing::TempDir dir;
  const std::string out = (dir.path() / "stopped").string();
  const std::string run = phalanxBinary() + " experiment --grid " + sourceDir() +
                          "/configs/experiments/smoke.yaml --base-port 24000 --out " + out;
  // Cells far too long to finish (a million rounds), interrupted once the first cell's peers
  // have run a round (however long that takes here); the shell reports the exit code.
  const auto stopped =
      runProcess("(" + run +
                 " --rounds 1000000 & pid=$!; for i in $(seq 1200); do "
                 "ls " +
                 out +
                 "/cells/*/run/node-0.jsonl >/dev/null 2>&1 && break; sleep 0.1; done; "
                 "kill -TERM $pid; wait $pid; echo exit=$?) 2>&1");
  EXPECT_THAT(stopped.output, HasSubstr("interrupted"));
  EXPECT_THAT(stopped.output, HasSubstr("exit=1"));
  EXPECT_TRUE(fs::exists(fs::path(out) / "results.csv"));
  // No peer of this run outlives it.
  const auto left = runProcess("pgrep -f '[p]halanx node.*" + out + "' | wc -l");
  EXPECT_EQ(left.output.substr(0, 1), "0") << left.output;
  // The interrupted cell could not finish: --resume runs it (and the rest) again.
  const auto resumed = runProcess(run + " --rounds 30 --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_THAT(resumed.output, HasSubstr("4 cells, 4 to run"));
}

}  // namespace
}  // namespace phalanx
