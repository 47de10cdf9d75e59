// Every peer of a topology in one process (DESIGN.md "Simulation", `phalanx simulate`): the same
// PeerNode round code on the in-memory network (net/memory_transport.h) in virtual time
// (net/virtual_time.h), so a run is the same on every rerun with the same seed, deadlines
// included, and uses every core. Writes what `phalanx node --out` writes per peer
// (node-K.jsonl, node-K.npy) plus one simulation.log; faults are injected at virtual times.
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "net/memory_transport.h"
#include "node/compute_floor.h"
#include "node/config.h"
#include "node/fault_command.h"
#include "node/peer_node.h"
#include "topologies/topology.h"

namespace phalanx::node {

// At virtual time `at_seconds`, node `node` gets `command`: anything PeerNode::inject takes
// (crash, partition, attack, heal, ...), or restart (a crashed node starts again from its
// newest checkpoint, as `phalanx node --resume`).
struct SimulatedFault {
  double at_seconds = 0;
  std::uint32_t node = 0;
  FaultCommand command;
};

// Parses "SECONDS NODE COMMAND..." (one fault per line of a --faults file; # comments). Throws
// ConfigError naming the file and line of the first line that does not parse, the command's
// own mistakes (an unknown fault, a value out of range) included.
std::vector<SimulatedFault> parseFaults(const std::string& text, const std::string& source);

// A links file (# comments), one of per line:
//   A B LATENCY_MS [RATE_MBIT [JITTER_MS [LOSS]]]   one edge (net/memory_transport.h, LinkModel)
//   region NAME IDS                                 nodes in a region, e.g. region eu 0-15
//   within LATENCY_MS [RATE_MBIT [JITTER_MS [LOSS]]]  every edge inside a region
//   across LATENCY_MS [RATE_MBIT [JITTER_MS [LOSS]]]  every edge between two regions
// over `fallback` for the rest. Throws ConfigError naming the file and line.
net::LinkTable parseLinks(const std::string& text, const std::string& source,
                          net::LinkModel fallback);
// The regions the topology gives its nodes (`region:`, `phalanx topology gen --regions`) into
// `links`, beside those of the links file's `region` lines; a node both name differently is a
// ConfigError naming `source` (the links file).
void addTopologyRegions(net::LinkTable& links, const topologies::Topology& topology,
                        const std::string& source);

// `count` random episodes over [0, span_seconds) among `nodes` (seeded): a crash and a restart
// 0.05–0.3 s later, a partition from one neighbour healed 0.05–0.3 s later, or an attack switch
// (alie, then none). Used by the soak.
std::vector<SimulatedFault> chaosFaults(const topologies::Topology& topology,
                                        std::span<const std::uint32_t> nodes, std::size_t count,
                                        double span_seconds, std::uint64_t seed);

struct SimulationSetup {
  Config config;  // byzantine: the attackers and their attacks, known to each other
  // Attackers started by hand (`phalanx node --attack`): not in the config, so no one, their
  // fellows included, knows of them.
  std::map<std::uint32_t, AttackSpec> attacks;
  std::shared_ptr<const topologies::Topology> topology;
  std::uint64_t rounds = 0;  // 0: config.rounds.count
  net::LinkTable links;
  unsigned threads = 0;          // 0: every core
  std::filesystem::path out;     // node-K.jsonl, simulation.log, checkpoints/; empty: none
  bool write_models = true;      // node-K.npy for every honest peer that finished
  std::size_t eval_samples = 0;  // evaluate on the first N test samples (0: all)
  // Virtual time each peer's round computation takes (its message leaves that much after the
  // round opens): about a Fashion-MNIST MLP step and mix on one core.
  std::chrono::microseconds compute_time{2000};
  std::vector<SimulatedFault> faults;
  // > 0: after the rounds, this many local steps on each of a few fresh learners of honest
  // peers' shards, timed on the same threads: the compute floor (node/compute_floor.h).
  std::uint64_t floor_steps = 0;
  // Each receiver digests every vector it hears, as a real node must, instead of comparing
  // bytes with its sender's (net/digest_memo.h): what a statement costs a deployed peer.
  bool hash_every_vector = false;
  double sample_every_seconds = 0;  // `on_sample` this often in virtual time (0: at the end)
  // Between windows (nothing runs): every node as it is now, by id.
  std::function<void(double seconds, const std::map<std::uint32_t, const PeerNode*>& nodes)>
      on_sample;
  // On the node's own thread (one node's calls never overlap).
  std::function<void(std::uint32_t node, const RoundRecord& record)> on_round;
  std::shared_ptr<spdlog::logger> log;  // null: simulation.log under out (or no log)
};

struct SimulationResult {
  std::size_t peers = 0;
  std::set<std::uint32_t> byzantine;
  std::vector<std::uint32_t> finished, diverged, crashed;  // crashed: down at the end
  double virtual_seconds = 0, wall_seconds = 0;
  // The rounds alone (no data loading, no node building, no models written): wall time and the
  // whole process's CPU time, so per-round costs are measured without the start-up.
  double rounds_wall_seconds = 0, rounds_cpu_seconds = 0;
  std::uint64_t events = 0, windows = 0, peer_rounds = 0;
  // Statement digests (net/digest_memo.h): BLAKE3 computed, and checks answered by comparing
  // bytes with a vector hashed before.
  std::uint64_t digests_hashed = 0, digests_compared = 0;
  bool every_vector_hashed = false;   // SimulationSetup::hash_every_vector (no counts then)
  std::optional<ComputeFloor> floor;  // when floor_steps > 0
  unsigned threads = 0;
};

// Throws ConfigError, DataError (as `phalanx node` would) and std::invalid_argument (links).
SimulationResult simulate(SimulationSetup setup);

}  // namespace phalanx::node
