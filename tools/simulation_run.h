// A simulated run folder (`phalanx simulate`, `phalanx experiment --engine simulate`): every peer
// of the topology in this process (node/simulation.h), then the same summary.json, report.html
// and monitor.jsonl as `phalanx launch` writes, read back from the peers' node-K.jsonl.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "node/simulation.h"
#include "tools/run_analysis.h"

namespace phalanx::tools {

// What `phalanx simulate` was asked, as on its command line (files and numbers); the CLI binds
// its options to these fields.
struct SimulateRequest {
  std::string topology_file, config_file;
  std::vector<std::string> sets;  // path=value overrides
  std::uint64_t rounds = 0;       // 0: the config's
  std::string byzantine;          // "1,3,7"
  std::string attack = "alie";
  std::string out;
  double latency_ms = 1, rate_mbit = 0;  // every link (rate 0: unlimited) ...
  std::string links_file;                // ... but these (node/simulation.h parseLinks)
  double compute_ms = 2;                 // node::SimulationSetup::compute_time
  std::string faults_file;               // "SECONDS NODE COMMAND" per line
  std::size_t chaos = 0;                 // random fault episodes among the honest peers ...
  double chaos_seconds = 1;              // ... over this much virtual time
  unsigned threads = 0;
  std::size_t eval_samples = 0;
  double sample_every_seconds = 0;  // consensus-distance samples in virtual time (0: the end)
  std::uint64_t floor_steps = 0;    // > 0: measure the compute floor after the rounds
  bool write_models = true;
  bool hash_every_vector = false;  // node::SimulationSetup::hash_every_vector
  bool force = false;              // --out may hold an earlier run, whose files are deleted first
  bool json = false;               // the outcome as one JSON object on stdout
  // A progress line on stderr (peer-rounds, rate, ETA), redrawn twice a second; by default only
  // when stderr is a terminal.
  bool progress = false;
  std::string command_line;  // for the report
};

struct SimulateOutcome {
  RunSummary summary;
  std::string summary_json;
  node::SimulationResult result;
  long peak_rss_kib = 0;  // of this process, after the run
  // Resident memory at each consensus sample (virtual seconds, MiB): flat once warm, or a leak.
  std::vector<std::pair<double, double>> rss_mib;
};

// Throws node::ConfigError, node::DataError, topologies::TopologyError, std::invalid_argument
// (a bad id list).
SimulateOutcome runSimulation(const SimulateRequest& request);

// The run's figures as one JSON object (simulation.json): peers, threads, virtual and wall
// seconds, peer-rounds per wall second, events, peak RSS, resident MiB at each sample ([virtual s,
// MiB]).
nlohmann::ordered_json simulationObject(const SimulateOutcome& o);

}  // namespace phalanx::tools
