#include "tools/cell_record.h"

#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "tools/run_analysis.h"

namespace phalanx::tools {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double jsonNumber(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : kNaN;
}

}  // namespace

CellResult readCellResult(const Cell& cell, const std::filesystem::path& run, CellStatus status,
                          double wall_seconds, const std::vector<std::uint32_t>& byzantine) {
  CellResult r{.cell = cell,
               .status = status,
               .final_acc_mean = kNaN,
               .final_acc_min = kNaN,
               .best_acc_mean = kNaN,
               .consensus_distance = kNaN,
               .byzantine_leakage = kNaN,
               .detection_rate = kNaN,
               .wire_bytes = kNaN,
               .compression_ratio = kNaN,
               .wall_seconds = wall_seconds};
  std::vector<std::uint32_t> crashed;
  if (const auto summary = readSummary(run)) {
    r.final_acc_mean = summary->honest_accuracy_mean;
    r.final_acc_min = summary->honest_accuracy_min;
    r.consensus_distance = summary->consensus_distance;
    r.byzantine_leakage = summary->byzantine_leakage;
    r.detection_rate = summary->detection_rate;
    r.compression_ratio = summary->compression_ratio;
    r.uplink_bytes = summary->uplink_bytes;
    r.downlink_bytes = summary->downlink_bytes;
    r.downlink_dense_bytes = summary->downlink_dense_bytes;
    crashed = summary->crashed;
  }
  const std::vector<PeerHistory> peers =
      readRunFolder(run, std::set<std::uint32_t>(byzantine.begin(), byzantine.end()));
  const RunSummary s = summarize(peers, {}, crashed);
  r.rounds = s.series.rounds;
  r.accuracy_mean = s.series.accuracy_mean;
  if (!s.series.accuracy_mean.empty()) {
    r.best_acc_mean =
        *std::max_element(s.series.accuracy_mean.begin(), s.series.accuracy_mean.end());
    r.wire_bytes = s.series.wire_bytes.back();
  }
  return r;
}

namespace {
// The figures a record carries, by name.
const std::vector<std::pair<const char*, double CellResult::*>> kRecordFigures{
    {"final_acc_mean", &CellResult::final_acc_mean},
    {"final_acc_min", &CellResult::final_acc_min},
    {"best_acc_mean", &CellResult::best_acc_mean},
    {"consensus_distance", &CellResult::consensus_distance},
    {"byzantine_leakage", &CellResult::byzantine_leakage},
    {"detection_rate", &CellResult::detection_rate},
    {"wire_bytes", &CellResult::wire_bytes},
    {"compression_ratio", &CellResult::compression_ratio},
    {"wall_seconds", &CellResult::wall_seconds},
    {"uplink_bytes", &CellResult::uplink_bytes},
    {"downlink_bytes", &CellResult::downlink_bytes},
    {"downlink_dense_bytes", &CellResult::downlink_dense_bytes}};
}  // namespace

std::string cellRecordJson(const CellRecord& record) {
  const CellResult& r = record.result;
  nlohmann::json j{{"status", kCellStatuses.name(r.status)}, {"exit_code", record.exit_code}};
  for (const auto& [name, field] : kRecordFigures) {
    j[name] = std::isfinite(r.*field) ? nlohmann::json(r.*field) : nlohmann::json(nullptr);
  }
  j["rounds"] = r.rounds;
  nlohmann::json curve = nlohmann::json::array();
  for (double a : r.accuracy_mean)
    curve.push_back(std::isfinite(a) ? nlohmann::json(a) : nlohmann::json(nullptr));
  j["accuracy_mean"] = std::move(curve);
  return j.dump() + "\n";
}

std::optional<CellRecord> cellRecordFrom(const Cell& cell, const std::string& json) {
  const auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("status") || !j["status"].is_string() ||
      !j.contains("final_acc_mean")) {
    return std::nullopt;
  }
  const auto status = kCellStatuses.parse(j["status"].get<std::string>());
  if (!status) return std::nullopt;
  CellRecord record{.result = {.cell = cell, .status = *status}};
  if (j.contains("exit_code") && j["exit_code"].is_number_integer()) {
    record.exit_code = j["exit_code"].get<int>();
  }
  CellResult& r = record.result;
  for (const auto& [name, field] : kRecordFigures) r.*field = jsonNumber(j, name);
  if (j.contains("rounds") && j.contains("accuracy_mean") && j["rounds"].is_array() &&
      j["accuracy_mean"].is_array() && j["rounds"].size() == j["accuracy_mean"].size()) {
    for (std::size_t i = 0; i < j["rounds"].size(); ++i) {
      if (!j["rounds"][i].is_number_unsigned()) return record;  // a damaged curve: figures only
    }
    for (std::size_t i = 0; i < j["rounds"].size(); ++i) {
      r.rounds.push_back(j["rounds"][i].get<std::uint64_t>());
      const auto& a = j["accuracy_mean"][i];
      r.accuracy_mean.push_back(a.is_number() ? a.get<double>() : kNaN);
    }
  }
  return record;
}

void writeCellRecord(const std::filesystem::path& file, const CellRecord& r) {
  std::ofstream(file) << cellRecordJson(r);
}

std::optional<CellRecord> readCellRecord(const Cell& cell, const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  return cellRecordFrom(cell, std::string(std::istreambuf_iterator<char>(in), {}));
}

}  // namespace phalanx::tools
