// A grid's run (`phalanx experiment`): every cell of a grid (tools/experiment.h) as one `phalanx
// launch` or `phalanx simulate`, J at a time, each slot on ports of its own; a cell's ending
// recorded (tools/cell_record.h: ok, failed, error) and the grid going on; cells already done
// skipped on resume (those that could not run retried), cells that would run the same given the
// record of the first; Ctrl-C or SIGTERM stops the running cells and writes what ran. Then
// DIR/results.csv, DIR/results.md and DIR/plots/*.svg.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/experiment.h"
#include "tools/launch.h"

namespace phalanx::tools {

struct GridRunOptions {
  std::string grid, out;  // the grid file; the results folder
  std::vector<std::string> filters;
  std::size_t jobs = 1;
  bool resume = false;
  bool report_only = false;  // tables and plots from the records in `out`; nothing runs
  std::uint16_t base_port = 20000;
  std::uint64_t rounds = 0;  // 0: the grid's
  Engine engine = Engine::kLaunch;
  bool json = false;  // the tables' files and every cell's record as one JSON object
  // What each cell runs (`phalanx launch|simulate ...`): this executable by default; a test
  // names the built binary.
  std::string phalanx = selfExecutable();
  // The engine's log in a cell's folder.
  std::string logName() const { return std::string(kEngines.name(engine)) + ".log"; }
};

// Runs the grid; 0 when every cell ran (ok or failed) and nothing interrupted it, 1 when some
// could not run or it was interrupted, 2 for a grid, filter or cell that cannot run at all.
int runGrid(const GridRunOptions& options);

}  // namespace phalanx::tools
