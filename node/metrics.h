// A node's counters and gauges (DESIGN.md "Files", the metric list) and their Prometheus text
// rendering. Plain values, updated by the round loop on its thread; rendering produces a string
// that the HTTP thread serves from a snapshot.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace phalanx::node {

// Prometheus histogram with fixed upper bounds (seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // "# TYPE" line and the _bucket/_sum/_count series, with `labels` ("" or `node="3"`).
  std::string render(const std::string& name, const std::string& help,
                     const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;  // per bound, not cumulative; +Inf last
  double sum_ = 0;
  std::uint64_t count_ = 0;
};

struct NodeMetrics {
  static constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

  std::uint32_t node = 0;
  std::uint64_t round = 0;  // rounds completed
  // Local optimizer steps taken: H per round under exchange: outer, one per round otherwise.
  std::uint64_t local_steps = 0;
  double train_loss = kUnknown;     // the last round's minibatch loss
  double test_accuracy = kUnknown;  // the last evaluation
  double test_loss = kUnknown;
  double learning_rate = kUnknown;
  std::uint64_t bytes_sent_total = 0;  // round payloads as sent, protobuf framing included
  std::uint64_t bytes_received_total = 0;
  std::uint64_t dense_bytes_total = 0;  // what the same messages would weigh as dense fp32
  // exchange: hub — what this node sent, by direction: a leaf's to the hub (uplink), the
  // hub's to the leaves (downlink). Zero in the other exchanges.
  std::uint64_t bytes_uplink_total = 0, bytes_downlink_total = 0;
  std::uint64_t messages_sent_total = 0;
  std::uint64_t keyframes_sent_total = 0;
  std::uint64_t resyncs_requested_total = 0;
  std::uint64_t mix_errors_total = 0;  // rounds whose mix failed (the node kept y)
  std::map<std::uint32_t, std::uint64_t> peer_excluded_total;  // by peer
  std::map<std::uint32_t, std::uint64_t> peer_heard_total;     // rounds whose mix saw the peer
  std::map<std::uint32_t, double> peer_distance;  // ‖ŷ_j − ŷ_i‖ at the last mix
  std::map<std::uint32_t, std::uint64_t> deadline_misses_total;  // by peer
  // Rounds in which more than b neighbours held a different vector from the peer than this
  // node did (node/equivocation.h); a peer caught once is left out of every later mix.
  std::map<std::uint32_t, std::uint64_t> equivocations_total;
  // Round statements (docs/PROTOCOL.md "Equivocation"): signed by this node, relayed for others,
  // signatures checked (only where statements disagree), proofs sent.
  std::uint64_t statements_signed_total = 0;
  std::uint64_t statements_relayed_total = 0;
  std::uint64_t signatures_checked_total = 0;
  std::uint64_t proofs_sent_total = 0;
  std::map<std::string, std::uint64_t> messages_rejected_total;  // by reason
  std::uint64_t live_peers = 0;
  double accordion_low_layers =
      kUnknown;  // layers Accordion keeps at LOW compression (adaptive only)
  Histogram round_seconds{{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}};

  // Prometheus text exposition format, every name prefixed `phalanx_`, labelled node="K".
  std::string prometheus() const;
};

}  // namespace phalanx::node
