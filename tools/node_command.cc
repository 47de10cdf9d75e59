// `phalanx node`: the command line of one peer's process (node::DaemonRequest); the setup and
// the process itself are node/daemon.h.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "node/daemon.h"
#include "node/peer_node.h"
#include "tools/command.h"
#include "topologies/topology.h"

namespace phalanx::tools {
namespace {

int runNode(const node::DaemonRequest& request) {
  node::PeerSetup setup;
  try {
    setup = node::daemonSetup(request);
  } catch (const base::Error& e) {
    spdlog::error("{}", e.what());
    return exitCodeOf(e);
  }
  const auto log = setup.log;
  try {
    switch (node::runDaemon(std::move(setup), request.out)) {
      case node::DaemonExit::kCompleted:
        return kExitOk;
      case node::DaemonExit::kDiverged:
        return kExitDiverged;
      case node::DaemonExit::kIncomplete:
        return kExitFailure;
    }
  } catch (const base::Error& e) {
    log->error("{}", e.what());
    return exitCodeOf(e);
  } catch (const std::exception& e) {  // ports taken, TLS files unreadable
    log->error("cannot start: {}", e.what());
    return kExitFailure;
  }
  return kExitFailure;
}

}  // namespace

Command addNodeCommand(CLI::App& root) {
  auto opts = std::make_shared<node::DaemonRequest>();
  auto join_timeout_ms = std::make_shared<std::uint64_t>(30000);
  CLI::App* app = root.add_subcommand(
      "node",
      "Run one peer of a topology: local momentum steps, compressed gossip with its neighbours, "
      "robust mixing. Serves /metrics and /model on the node's metrics_port; with --out writes "
      "DIR/node-K.jsonl (one JSON object per round) and DIR/node-K.log. SIGTERM or Ctrl-C: "
      "Goodbye to the neighbours and exit. Exit 0 when every round ran; an honest peer then "
      "writes its final parameters to DIR/node-K.npy. Exit 3 when the model went NaN/Inf "
      "(diverged; "
      "stopped after a last evaluation).");
  app->add_option("--topology", opts->topology, "topology file (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--config", opts->config, "experiment config (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--id", opts->id,
                  "this node's id in the topology, or auto (PHALANX_RANK / SLURM_PROCID / "
                  "OMPI_COMM_WORLD_RANK: the rank-th node in id order)")
      ->required();
  app->add_option("--rounds", opts->rounds, "number of rounds (overrides rounds.count)")
      ->check(CLI::PositiveNumber);
  app->add_option("--set", opts->sets, "override a config field: path=value, e.g. mixing.rule=mean")
      ->allow_extra_args(false);
  app->add_option(
         "--attack", opts->attack,
         "run as a Byzantine peer with this attack: robust/'s vector attacks (also as "
         "equivocate:NAME, crafted per target), labelflip, silent, garbage, wrong_dim, replay, "
         "stall, round_lie, resync_flood, keyframe_spam (docs/PROTOCOL.md)")
      ->check(checkAttackName, "an attack");
  app->add_option("--out", opts->out, "folder for node-K.jsonl, node-K.log (and checkpoints)");
  app->add_flag("--resume", opts->resume, "start from the newest usable checkpoint");
  app->add_option("--listen-host", opts->listen_host,
                  "address to bind (default: the topology's host)");
  app->add_option("--join-timeout-ms", *join_timeout_ms,
                  "round 0 waits this long for every neighbour to connect (default 30000)");
  return {app, [opts, join_timeout_ms] {
            opts->join_timeout = std::chrono::milliseconds(*join_timeout_ms);
            return runNode(*opts);
          }};
}

}  // namespace phalanx::tools
