#include "node/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace phalanx::node {
namespace {

// Prometheus spells non-finite values NaN, +Inf, -Inf.
std::string value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

void family(std::string& out, const std::string& name, const char* type, const std::string& help) {
  out += fmt::format("# HELP phalanx_{} {}\n# TYPE phalanx_{} {}\n", name, help, name, type);
}

template <typename Map>
void perLabel(std::string& out, const std::string& name, const char* type, const std::string& help,
              const std::string& node, const char* label, const Map& values) {
  family(out, name, type, help);
  for (const auto& [key, v] : values) {
    out += fmt::format("phalanx_{}{{{},{}=\"{}\"}} {}\n", name, node, label, key, value(double(v)));
  }
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  const auto at = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  ++counts_[std::size_t(at)];
  sum_ += v;
  ++count_;
}

std::string Histogram::render(const std::string& name, const std::string& help,
                              const std::string& labels) const {
  std::string out;
  family(out, name, "histogram", help);
  const std::string sep = labels.empty() ? "" : ",";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? value(bounds_[i]) : "+Inf";
    out +=
        fmt::format("phalanx_{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep, le, cumulative);
  }
  out += fmt::format("phalanx_{}_sum{{{}}} {}\n", name, labels, value(sum_));
  out += fmt::format("phalanx_{}_count{{{}}} {}\n", name, labels, count_);
  return out;
}

std::string NodeMetrics::prometheus() const {
  const std::string n = fmt::format("node=\"{}\"", node);
  std::string out;
  const auto scalar = [&](const std::string& name, const char* type, const std::string& help,
                          double v) {
    family(out, name, type, help);
    out += fmt::format("phalanx_{}{{{}}} {}\n", name, n, value(v));
  };
  scalar("round", "gauge", "Rounds completed.", double(round));
  scalar("local_steps", "gauge",
         "Local optimizer steps taken (H per round under exchange: outer, else one per round).",
         double(local_steps));
  scalar("train_loss", "gauge", "Minibatch cross-entropy of the last local step.", train_loss);
  scalar("test_accuracy", "gauge", "Test accuracy at the last evaluation.", test_accuracy);
  scalar("test_loss", "gauge", "Test cross-entropy at the last evaluation.", test_loss);
  scalar("learning_rate", "gauge", "Learning rate of the last local step.", learning_rate);
  if (!std::isnan(accordion_low_layers)) {
    scalar("accordion_low_layers", "gauge",
           "Layers Accordion keeps at LOW compression (critical regime).", accordion_low_layers);
  }
  scalar("bytes_sent_total", "counter", "Bytes of round messages sent (frames included).",
         double(bytes_sent_total));
  scalar("bytes_received_total", "counter", "Bytes of frames received.",
         double(bytes_received_total));
  scalar("dense_bytes_total", "counter",
         "What the round messages sent would weigh as dense fp32 vectors.",
         double(dense_bytes_total));
  if (bytes_uplink_total > 0 || bytes_downlink_total > 0) {
    scalar("bytes_uplink_total", "counter", "Bytes this leaf sent up to the hub (exchange: hub).",
           double(bytes_uplink_total));
    scalar("bytes_downlink_total", "counter",
           "Bytes this hub broadcast down to the leaves (exchange: hub).",
           double(bytes_downlink_total));
  }
  scalar("messages_sent_total", "counter", "Round messages sent.", double(messages_sent_total));
  scalar("keyframes_sent_total", "counter", "Keyframes (full public replica) sent.",
         double(keyframes_sent_total));
  scalar("resyncs_requested_total", "counter", "Keyframes asked for after a replica gap.",
         double(resyncs_requested_total));
  scalar("mix_errors_total", "counter", "Rounds whose robust mix failed (the half step was kept).",
         double(mix_errors_total));
  scalar("live_peers", "gauge", "Neighbours with an open connection.", double(live_peers));
  perLabel(out, "peer_excluded_total", "counter",
           "Rounds in which the rule excluded the peer's vector.", n, "peer", peer_excluded_total);
  perLabel(out, "peer_heard_total", "counter",
           "Rounds in which the peer's vector entered the rule.", n, "peer", peer_heard_total);
  perLabel(out, "peer_distance", "gauge",
           "Distance of the peer's replica to this node's at the last mix.", n, "peer",
           peer_distance);
  perLabel(out, "deadline_misses_total", "counter",
           "Rounds that closed without the peer's message.", n, "peer", deadline_misses_total);
  perLabel(out, "equivocations_total", "counter",
           "Rounds in which the peer was caught signing two vectors, or a false signature.", n,
           "peer", equivocations_total);
  scalar("statements_signed_total", "counter", "Round statements this node signed.",
         double(statements_signed_total));
  scalar("statements_relayed_total", "counter", "Other peers' statements relayed onwards.",
         double(statements_relayed_total));
  scalar("signatures_checked_total", "counter",
         "Statement signatures checked (where statements disagreed).",
         double(signatures_checked_total));
  scalar("proofs_sent_total", "counter", "Equivocation proofs sent or forwarded.",
         double(proofs_sent_total));
  perLabel(out, "messages_rejected_total", "counter", "Frames and messages refused, by reason.", n,
           "reason", messages_rejected_total);
  out += round_seconds.render("round_seconds", "Wall time of a round, local step to mix.", n);
  return out;
}

}  // namespace phalanx::node
