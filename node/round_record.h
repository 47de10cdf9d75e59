// One round of one peer as the JSON-lines log has it (DIR/node-K.jsonl): what the round loop
// records, what the daemon and the simulation write, field names as the Prometheus metrics
// minus `phalanx_`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "node/metrics.h"

namespace phalanx::node {

// What one round did, for the JSON-lines log and for tests.
struct RoundRecord {
  std::uint64_t round = 0;
  double train_loss = NodeMetrics::kUnknown;
  double learning_rate = NodeMetrics::kUnknown;
  std::optional<double> test_accuracy, test_loss;  // on evaluation rounds and the last
  // A script's own evaluation metrics (perplexity, ...), as it named them, with the above.
  std::vector<std::pair<std::string, double>> test_metrics;
  std::uint64_t bytes_sent_total = 0, bytes_received_total = 0, dense_bytes_total = 0;
  std::uint64_t bytes_uplink_total = 0, bytes_downlink_total = 0;  // exchange: hub (NodeMetrics)
  std::uint64_t local_steps = 0;  // exchange: outer: local steps taken by the end of the round
  // Model gossip through CHOCO replicas: the consensus step this round's mix took, and the
  // contraction its codec achieved on the round's delta (PublicReplica::contraction), and how
  // far the public replica lagged behind the model before it (PublicReplica::residual).
  std::optional<double> gamma, contraction, residual;
  std::vector<std::uint32_t> mixed;     // peers whose replica entered the rule
  std::vector<std::uint32_t> excluded;  // of those, the ones the rule left out
  std::vector<std::uint32_t> missing;   // neighbours not heard (or whose replica was invalid)
  std::vector<std::uint32_t>
      equivocators;  // neighbours caught equivocating so far (never mixed again)
  // A vector attacker's round: how many honest vectors it crafted from (its own and, pooling,
  // its fellows'), and whether it ran the attack's computation itself (a colluder that is not
  // the coalition's leader sends the leader's vector).
  std::optional<std::size_t> attack_known;
  bool attack_computed = false;
  // A colluder acted without all its coalition owed it this round (a fellow's share, or the
  // leader's vector, missed the wait; or a fellow was not connected): on a real network its
  // attack_known may then be below what the coalition heard.
  bool coalition_short = false;
  bool deadline_hit = false;
  bool quorum_close = false;  // closed at quorum + adaptive deadline, some neighbour still out
  double round_seconds = 0;
};

// One JSON object (one line of node-K.jsonl). The one writer of the format.
std::string roundRecordJson(std::uint32_t node, const RoundRecord& r);
// The one reader: nullopt when the line is not a record (not a JSON object, or no whole
// "round" — a line cut by a crash, say); a field of the wrong type reads as absent.
std::optional<RoundRecord> parseRoundRecord(std::string_view line);

}  // namespace phalanx::node
