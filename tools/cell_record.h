// One experiment cell's results (its run folder's figures) and its record, the file
// DIR/cells/NAME/result.json that outlives the run folder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "base/names.h"
#include "tools/experiment.h"

namespace phalanx::tools {

// How a cell ended: it ran and every honest peer finished; it ran and one did not; it did not
// run (or was interrupted: --resume runs it again).
enum class CellStatus : std::uint8_t { kOk, kFailed, kError };
inline constexpr auto kCellStatuses = base::nameTable<CellStatus>(
    {{CellStatus::kOk, "ok"}, {CellStatus::kFailed, "failed"}, {CellStatus::kError, "error"}});

// A cell's results: figures from its run folder (NaN where not measured).
struct CellResult {
  Cell cell;
  CellStatus status = CellStatus::kError;
  double final_acc_mean, final_acc_min, best_acc_mean, consensus_distance, byzantine_leakage,
      detection_rate, wire_bytes, compression_ratio, wall_seconds;
  std::vector<std::uint64_t> rounds;  // evaluation rounds
  std::vector<double> accuracy_mean;  // honest mean at those rounds
  // exchange: hub (RunSummary's): honest uplink and downlink bytes, and the dense downlink.
  double uplink_bytes = std::numeric_limits<double>::quiet_NaN(),
         downlink_bytes = std::numeric_limits<double>::quiet_NaN(),
         downlink_dense_bytes = std::numeric_limits<double>::quiet_NaN();
};

// Reads RUN/summary.json and the peers' logs.
CellResult readCellResult(const Cell& cell, const std::filesystem::path& run, CellStatus status,
                          double wall_seconds, const std::vector<std::uint32_t>& byzantine);

// A cell's record, DIR/cells/NAME/result.json: status, wall seconds, the launch's exit code,
// every figure (null where not measured) and the accuracy curve. It outlives the run folder
// (tools/dev/results keeps the records under docs/results/NAME/cells), so a later `--resume` in a
// folder seeded with them counts those cells as done and puts them in the tables again.
// The one writer and reader of the format.
struct CellRecord {
  CellResult result;   // status, wall seconds, figures, curve
  int exit_code = -1;  // the launch's (or simulation's); -1 when it never exited
};
std::string cellRecordJson(const CellRecord& r);
// nullopt when `json` is not a record (no status or no figures); a damaged curve is dropped
// and the figures kept.
std::optional<CellRecord> cellRecordFrom(const Cell& cell, const std::string& json);
void writeCellRecord(const std::filesystem::path& file, const CellRecord& r);
std::optional<CellRecord> readCellRecord(const Cell& cell, const std::filesystem::path& file);

}  // namespace phalanx::tools
