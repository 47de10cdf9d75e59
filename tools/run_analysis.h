// The robustness figures of a run (ALGORITHMS.md §5), computed from what the peers wrote
// (DIR/node-K.jsonl), what the monitor measured (consensus distance from GET /model) and
// which peers died. Pure: the monitor, launch and their tests share it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "node/round_record.h"

namespace phalanx::tools {

struct PeerHistory {
  std::uint32_t id = 0;
  bool byzantine = false;
  std::vector<node::RoundRecord> rounds;  // the lines of node-K.jsonl, one per round
  std::size_t malformed_lines = 0;        // skipped (a line cut by a crash, say)
  std::size_t superseded_rounds = 0;      // logged again after a restart (see readPeerHistory)
};

// Reads DIR/node-K.jsonl; an absent file gives no rounds. A peer restarted with --resume appends
// the rounds from its checkpoint on again: a record for a round at or before the last one kept
// supersedes the records from that round on (the restarted run is the one the final model
// came from).
PeerHistory readPeerHistory(const std::filesystem::path& jsonl, std::uint32_t id, bool byzantine);

// Every DIR/node-K.jsonl of a run folder, by id; `byzantine` marks the attackers. An absent
// folder gives none.
std::vector<PeerHistory> readRunFolder(const std::filesystem::path& dir,
                                       const std::set<std::uint32_t>& byzantine);

// Ξ² = (1/h) Σ_i ‖x_i − x̄_H‖² over the honest models (all of one length; fewer than two: 0).
double consensusDistance(std::span<const std::span<const float>> honest_models);
double consensusDistance(std::span<const std::vector<float>> honest_models);

// The min, mean and max of the finite values (NaN each when none is): honest accuracies.
struct Spread {
  double min, mean, max;
};
Spread spreadOf(std::span<const double> values);

// What the monitor measured at one moment.
struct MonitorSample {
  double seconds = 0;             // since the monitor started
  std::uint64_t round = 0;        // the slowest honest peer's round then
  std::uint64_t local_steps = 0;  // and its local steps (0: not exported)
  double consensus_distance = 0;
  double accuracy_min = std::numeric_limits<double>::quiet_NaN();  // latest evaluations then
  double accuracy_mean = std::numeric_limits<double>::quiet_NaN();
  double accuracy_max = std::numeric_limits<double>::quiet_NaN();
};

// DIR/monitor.jsonl: one object per sample, written while the run goes and read back by
// `monitor --from DIR`.
std::string monitorSampleJson(const MonitorSample& s);
std::vector<MonitorSample> readMonitorSamples(const std::filesystem::path& jsonl);

// One value per round (honest peers), for the report's plots.
struct RoundSeries {
  std::vector<std::uint64_t> rounds;  // evaluation rounds
  std::vector<double> accuracy_min, accuracy_mean, accuracy_max;
  std::vector<double> wire_bytes;  // mean honest bytes sent by then
  // Mean over honest peers of their summed round_seconds by then (wall time under launch, the
  // virtual clock in a simulation), and the local steps taken by then (exchange: outer only;
  // empty otherwise).
  std::vector<double> seconds;
  std::vector<std::uint64_t> local_steps;
  std::vector<std::uint64_t> detection_rounds;  // every round with a Byzantine vector mixed
  std::vector<double> detection;                // share of honest peers excluding one, that round
};

struct RunSummary {
  // Each honest peer's last evaluation, crashed peers left out.
  double honest_accuracy_mean = 0, honest_accuracy_min = 0, honest_accuracy_max = 0;
  double consensus_distance = 0;  // the last measured; NaN when never measured
  double byzantine_leakage = 0;   // Byzantine vectors kept / Byzantine vectors mixed (honest rules)
  double detection_rate = 0;  // honest peer-rounds excluding a Byzantine vector / those mixing one
  // Honest vectors excluded / honest vectors mixed (honest rules): the price of the rule, e.g.
  // NNA leaving out peers whose Dirichlet shard pulls them away. NaN when no honest one was mixed.
  double honest_excluded = 0;
  double compression_ratio = 0;  // Σ dense fp32 bytes / Σ wire bytes over honest peers
  double round_seconds_mean = 0;
  // Over every honest peer-round, nearest rank (the ceil(q·n)-th smallest): the tail a WAN or
  // a straggler puts on the round time. NaN when no round was recorded.
  double round_seconds_p50 = 0, round_seconds_p99 = 0, round_seconds_max = 0;
  // exchange: hub — Σ over honest peers of what they sent up (leaves) and down (the hub), and
  // what the hub's broadcasts would weigh dense. NaN in the other exchanges.
  double uplink_bytes = 0, downlink_bytes = 0, downlink_dense_bytes = 0;
  std::uint64_t rounds = 0;             // rounds the furthest honest peer completed
  std::vector<std::uint32_t> crashed;   // peers whose process died before finishing
  std::vector<std::uint32_t> diverged;  // honest peers stopped because their model went NaN/Inf
  std::vector<std::uint32_t> byzantine;
  std::map<std::uint32_t, std::map<std::uint32_t, double>>
      exclusion_share;  // honest i -> peer j -> share
  // test_loss and a script's own metrics (perplexity, ...): the spread of each honest peer's last
  // value, crashed peers left out; empty when no peer reported one.
  std::map<std::string, Spread> honest_metrics;
  RoundSeries series;
};

// NaN figures where nothing was measured (no Byzantine peer mixed: leakage and detection NaN).
RunSummary summarize(std::span<const PeerHistory> peers, std::span<const MonitorSample> samples,
                     std::vector<std::uint32_t> crashed);

// The summary as one JSON object: honest_accuracy_mean, honest_accuracy_min,
// honest_accuracy_max, consensus_distance, byzantine_leakage, detection_rate, honest_excluded,
// compression_ratio, round_seconds_mean, round_seconds_p50, round_seconds_p99,
// round_seconds_max, uplink_bytes, downlink_bytes, downlink_dense_bytes, rounds, crashed,
// diverged, byzantine (null for NaN), and honest_metrics ({name: {min, mean, max}}) when any.
std::string summaryJson(const RunSummary& s);

// A compression ratio (dense fp32 bytes / wire bytes) as people read it: "27.5x fewer", "2.0 %
// fewer", "2.0 % more" (an uncompressed run's headers and statements cost a little more than
// dense fp32), "-" when unknown.
std::string versusDense(double ratio);
// The headline figures back from summaryJson's text (the series and exclusion shares are not
// in it); NaN where null, nullopt when it is not such an object.
std::optional<RunSummary> summaryFromJson(const std::string& json);
// DIR/summary.json through summaryFromJson; nullopt when missing or not a summary.
std::optional<RunSummary> readSummary(const std::filesystem::path& dir);

// Parses "1,3,7" (empty: none). Throws std::invalid_argument naming the bad item.
std::set<std::uint32_t> parseIdList(const std::string& text);

}  // namespace phalanx::tools
