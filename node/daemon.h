// One peer's process (`phalanx node`): the round loop on an io_context in real time over TCP,
// /metrics, /model and /control on the node's metrics port (the model and the faults applied on
// the loop's thread), one JSON line per round (DIR/node-K.jsonl), the final honest model
// (DIR/node-K.npy), SIGINT/SIGTERM to leave with a Goodbye. The CLI (tools/node_command.cc)
// only parses the command line and maps the outcome to an exit code.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "node/peer_node.h"

namespace phalanx::node {

enum class DaemonExit {
  kCompleted,   // every round ran
  kIncomplete,  // stopped early (a signal)
  kDiverged,    // the model went NaN/Inf; stopped after a last evaluation
};

// What starts one peer's process: `phalanx node`'s command line, or the Python package's Peer.
struct DaemonRequest {
  std::string topology, config;   // files
  std::string id;                 // a node id, or "auto" (SLURM_PROCID / OMPI_COMM_WORLD_RANK)
  std::vector<std::string> sets;  // config overrides, path=value
  std::string attack;             // empty: the config's byzantine entry for the id, if any
  std::string out;                // folder for node-K.jsonl, node-K.log, checkpoints; "": none
  std::string listen_host;        // "": the topology's host
  std::uint64_t rounds = 0;       // 0: rounds.count
  bool resume = false;
  std::chrono::milliseconds join_timeout{30000};
};

// --id K, or --id auto: the rank a launcher gives (PHALANX_RANK: a Kubernetes pod's ordinal, as
// `phalanx k8s` sets it; then Slurm's SLURM_PROCID, then Open MPI's OMPI_COMM_WORLD_RANK) picks
// the rank-th node of the topology in id order. Throws ConfigError naming what is wrong.
std::uint32_t resolveNodeId(const std::string& id, const topologies::Topology& topology);

// The PeerSetup a request describes, without data: config and topology read, the id resolved,
// a logger to stderr and OUT/node-K.log, the checkpoint folder, the compute threads and backend
// chosen. Throws ConfigError (naming the field and file) and topologies::TopologyError.
PeerSetup daemonSetup(const DaemonRequest& request);

struct DaemonOptions {
  // SIGINT/SIGTERM leave with a Goodbye. Off where the process that embeds the node owns its
  // signals (the Python package).
  bool signals = true;
  // Runs on the loop's thread once the node listens, before it dials: the embedder's handle on
  // the loop (asio::post onto `io` to call the node from another thread).
  std::function<void(asio::io_context& io, PeerNode& node)> on_ready;
  // Runs once the loop has ended, while the node and its loop still exist: after it, neither
  // may be touched.
  std::function<void()> on_stopped;
};

// `setup` without its data: the daemon loads the config's dataset and takes its shard (unless
// the setup brings its own learner). `out`: where the JSON lines and the final model go (empty:
// nowhere). Throws ConfigError, DataError, CheckpointError, and std::system_error when the ports
// are taken or TLS files unreadable; an injected "crash" ends the process at once (exit 137, as
// kill -9).
DaemonExit runDaemon(PeerSetup setup, const std::filesystem::path& out, DaemonOptions options = {});

}  // namespace phalanx::node
