// One peer's process (`phalanx node`): the round loop on an io_context in real time over TCP,
// /metrics, /model and /control on the node's metrics port (the model and the faults applied on
// the loop's thread), one JSON line per round (DIR/node-K.jsonl), the final honest model
// (DIR/node-K.npy), SIGINT/SIGTERM to leave with a Goodbye. The CLI (tools/node_command.cc)
// only parses the command line and maps the outcome to an exit code.
#pragma once

#include <filesystem>

#include "node/peer_node.h"

namespace phalanx::node {

enum class DaemonExit {
  kCompleted,   // every round ran
  kIncomplete,  // stopped early (a signal)
  kDiverged,    // the model went NaN/Inf; stopped after a last evaluation
};

// `setup` without its data: the daemon loads the config's dataset and takes its shard. `out`:
// where the JSON lines and the final model go (empty: nowhere). Throws ConfigError, DataError,
// CheckpointError, and std::system_error when the ports are taken or TLS files unreadable; an
// injected "crash" ends the process at once (exit 137, as kill -9).
DaemonExit runDaemon(PeerSetup setup, const std::filesystem::path& out);

}  // namespace phalanx::node
