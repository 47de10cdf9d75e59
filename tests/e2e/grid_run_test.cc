// The grid runner as a library (tools/grid_run.h), each cell a `phalanx simulate` of the built
// binary: two slots at once, every cell's status recorded, a resume that runs only what could
// not run, and a report-only pass that runs nothing.
#include "tools/grid_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tools/cell_record.h"

namespace phalanx::tools {
namespace {

namespace fs = std::filesystem;

GridRunOptions smoke(const fs::path& out) {
  return GridRunOptions{.grid = testing::sourceDir() + "/configs/experiments/smoke.yaml",
                        .out = out.string(),
                        .jobs = 2,
                        .rounds = 20,
                        .engine = Engine::kSimulate,
                        .phalanx = testing::phalanxPath()};
}

// Each cell's record, by cell folder name.
std::map<std::string, CellStatus> statuses(const fs::path& out) {
  const Grid grid = loadGrid(testing::sourceDir() + "/configs/experiments/smoke.yaml");
  std::map<std::string, CellStatus> seen;
  for (const Cell& cell : expand(grid, {})) {
    if (auto r = readCellRecord(cell, out / "cells" / cell.name() / "result.json"))
      seen[cell.name()] = r->result.status;
  }
  return seen;
}

TEST(GridRun, RunsEveryCellRecordsItsStatusAndResumesOnlyWhatCouldNotRun) {
  ::phalanx::testing::TempDir dir;
  const fs::path out = dir.path() / "grid";
  ASSERT_EQ(runGrid(smoke(out)), 0);
  auto seen = statuses(out);
  ASSERT_EQ(seen.size(), 4u);
  for (const auto& [name, status] : seen) EXPECT_EQ(status, CellStatus::kOk) << name;
  // The records hold each cell's figures: signflip breaks the mean and not NNA.
  std::map<std::string, double> accuracy;
  const Grid grid = loadGrid(testing::sourceDir() + "/configs/experiments/smoke.yaml");
  for (const Cell& cell : expand(grid, {})) {
    accuracy[cell.name()] =
        readCellRecord(cell, out / "cells" / cell.name() / "result.json")->result.final_acc_mean;
  }
  EXPECT_GT(accuracy.at("attack-signflip_rule-nna"),
            accuracy.at("attack-signflip_rule-mean") + 0.3);
  EXPECT_TRUE(fs::exists(out / "results.csv"));
  EXPECT_TRUE(fs::exists(out / "results.md"));

  // One record says the cell could not run: a resume runs that one alone.
  const std::string redo = seen.begin()->first;
  const fs::path record = out / "cells" / redo / "result.json";
  const auto before =
      fs::last_write_time(out / "cells" / std::prev(seen.end())->first / "result.json");
  {
    std::ifstream in(record);
    std::string text{std::istreambuf_iterator<char>(in), {}};
    text.replace(text.find("\"ok\""), 4, "\"error\"");
    std::ofstream(record) << text;
  }
  EXPECT_EQ(statuses(out)[redo], CellStatus::kError);
  GridRunOptions resume = smoke(out);
  resume.resume = true;
  ASSERT_EQ(runGrid(resume), 0);
  EXPECT_EQ(statuses(out)[redo], CellStatus::kOk);
  EXPECT_EQ(fs::last_write_time(out / "cells" / std::prev(seen.end())->first / "result.json"),
            before);  // the others were not run again

  // Report only: nothing runs, a cell without a record is reported as not run (exit 1).
  fs::remove_all(out / "cells" / redo);
  GridRunOptions report = smoke(out);
  report.report_only = true;
  EXPECT_EQ(runGrid(report), 1);
  EXPECT_FALSE(fs::exists(out / "cells" / redo / "result.json"));
}

}  // namespace
}  // namespace phalanx::tools
