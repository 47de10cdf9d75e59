// An experiment grid's results as tables and plots: results.csv, results.md, plots/*.svg.
// Pure.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tools/cell_record.h"
#include "tools/experiment.h"

namespace phalanx::tools {

// results.csv: every axis (attack and rule always), then status and the figures.
std::string resultsCsv(const Grid& grid, const std::vector<CellResult>& results);
// results.md: the setting, then pivot tables (rows attack, columns rule; means over the other
// axes) of final_acc_mean, final_acc_min and detection_rate where rules vary, breakdown tables
// (rule x f per attack) where f varies, where seeds vary each setting over its seeds (mean,
// standard error, worst seed, worst peer), a table of every cell where other axes vary, and
// links to the plots.
std::string resultsMarkdown(const Grid& grid, const std::vector<CellResult>& results,
                            const std::vector<std::string>& plots);
// SVG plots: (file name, svg) — accuracy vs round per attack (a line per other-axes setting),
// final accuracy vs wire bytes, and when f is an axis, breakdown curves per attack.
std::vector<std::pair<std::string, std::string>> resultPlots(
    const Grid& grid, const std::vector<CellResult>& results);

}  // namespace phalanx::tools
