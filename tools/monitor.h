// The live view of a run: scrapes every peer's /metrics (Prometheus text) and the honest
// peers' GET /model, and renders the terminal table of ALGORITHMS.md §5's figures. Used by
// `phalanx monitor` and by `phalanx launch` while its peers train. One thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "tools/run_analysis.h"
#include "topologies/topology.h"

namespace phalanx::tools {

struct MetricSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// The samples of a Prometheus text exposition (comments skipped; malformed lines ignored).
std::vector<MetricSample> parsePrometheus(const std::string& text);

// What one scrape saw of one peer.
struct PeerView {
  std::uint32_t id = 0;
  bool byzantine = false;
  bool up = false;  // /metrics answered
  std::uint64_t round = 0;
  std::uint64_t local_steps = 0;  // 0: a node that does not export them
  double test_accuracy = 0;       // NaN before the first evaluation
  double bytes_sent = 0, dense_bytes = 0;
  double round_seconds_sum = 0, round_seconds_count = 0;
  std::map<std::uint32_t, double> excluded, heard;  // by peer, cumulative
  std::optional<std::vector<float>> model;          // honest peers only
};

struct MonitorFigures {
  std::uint64_t round_min = 0, round_max = 0;              // honest peers that answer
  std::uint64_t local_steps_min = 0, local_steps_max = 0;  // the same peers' local steps
  double accuracy_min, accuracy_mean, accuracy_max;
  double consensus_distance;
  double byzantine_leakage;         // Byzantine vectors kept / mixed by honest rules, so far
  double compression_ratio;         // dense / wire bytes, honest peers
  double round_seconds;             // mean
  std::vector<std::uint32_t> down;  // peers that did not answer
};

// The summary a live monitor can give without the peers' logs: figures from the counters,
// accuracy and consensus series from its own samples; detection = 1 - leakage (a share of
// vectors, where the logs give a share of rounds).
RunSummary summarizeLive(const MonitorFigures& last, std::span<const MonitorSample> samples,
                         std::vector<std::uint32_t> crashed, std::set<std::uint32_t> byzantine);

// The figures of one scrape's views (the Byzantine peers' rounds and accuracies left out).
MonitorFigures figuresOf(std::span<const PeerView> peers, const std::set<std::uint32_t>& byzantine);

class Monitor {
 public:
  // `token`: the run's control.token, which GET /model requires (empty: no models, so no
  // consensus distance).
  Monitor(std::shared_ptr<const topologies::Topology> topology, std::set<std::uint32_t> byzantine,
          std::string token = "");

  // One pass over every peer (timeouts of a second or two per peer that hangs).
  void scrape();
  MonitorFigures figures() const;
  // The table, as text lines (no terminal control codes).
  std::string table(double elapsed_seconds) const;
  const std::vector<PeerView>& peers() const { return peers_; }
  // The figures of the last scrape as a sample for the report.
  MonitorSample sample(double elapsed_seconds) const;

 private:
  std::shared_ptr<const topologies::Topology> topology_;
  std::set<std::uint32_t> byzantine_;
  std::string token_;
  std::vector<PeerView> peers_;
};

}  // namespace phalanx::tools
