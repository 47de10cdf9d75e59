// A simulated run folder (`phalanx simulate`, `phalanx experiment --engine simulate`): every peer
// of the topology in this process (node/simulation.h), then the same summary.json, report.html
// and monitor.jsonl as `phalanx launch` writes, read back from the peers' node-K.jsonl.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "net/memory_transport.h"
#include "node/simulation.h"
#include "tools/run_analysis.h"

namespace phalanx::tools {

struct SimulateRequest {
  std::string topology_file, config_file;
  std::vector<std::string> sets;  // path=value overrides
  std::uint64_t rounds = 0;       // 0: the config's
  std::set<std::uint32_t> byzantine;
  std::string attack = "alie";
  std::filesystem::path out;
  net::LinkTable links;
  unsigned threads = 0;
  std::vector<node::SimulatedFault> faults;
  std::size_t eval_samples = 0;
  std::chrono::microseconds compute_time{2000};  // node::SimulationSetup::compute_time
  double sample_every_seconds = 0;  // consensus-distance samples in virtual time (0: the end)
  bool write_models = true;
  std::string command_line;  // for the report
};

struct SimulateOutcome {
  RunSummary summary;
  node::SimulationResult result;
  long peak_rss_kib = 0;  // of this process, after the run
  // Resident memory at each consensus sample (virtual seconds, MiB): flat once warm, or a leak.
  std::vector<std::pair<double, double>> rss_mib;
};

// Throws node::ConfigError, node::DataError, topologies::TopologyError, std::invalid_argument.
SimulateOutcome runSimulation(const SimulateRequest& request);

// "A B LATENCY_MS [RATE_MBIT]" per line (# comments): per-edge links over `fallback`. Throws
// node::ConfigError naming the file and line.
net::LinkTable parseLinks(const std::string& text, const std::string& source,
                          net::LinkModel fallback);

// The run's figures as one JSON object (simulation.json): peers, threads, virtual and wall
// seconds, peer-rounds per wall second, events, peak RSS, resident MiB at each sample ([virtual s,
// MiB]).
std::string simulationJson(const SimulateOutcome& o, std::size_t peers);

}  // namespace phalanx::tools
