// `phalanx node`: the command line of one peer's process — the id (or auto), the config with its
// overrides, the logger, the checkpoint folder; the process itself is node/daemon.h.
#include <fmt/format.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/device.h"
#include "node/daemon.h"
#include "node/local_trainer.h"
#include "node/peer_node.h"
#include "tools/command.h"
#include "topologies/topology.h"

namespace phalanx::tools {
namespace {

struct NodeOptions {
  std::string topology, config, id, attack, out, listen_host;
  std::uint64_t rounds = 0;
  std::vector<std::string> sets;
  bool resume = false;
  std::uint64_t join_timeout_ms = 30000;
};

// --id K, or --id auto: the rank a scheduler gives (Slurm, then Open MPI) picks the rank-th
// node of the topology in id order.
std::uint32_t resolveId(const std::string& id, const topologies::Topology& topology) {
  if (id != "auto") {
    std::size_t used = 0;
    unsigned long value = 0;
    try {
      value = std::stoul(id, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != id.size() || id.empty()) {
      throw node::ConfigError(fmt::format("--id {}: expected a node id or auto", id));
    }
    if (!topology.contains(std::uint32_t(value))) {
      throw node::ConfigError(fmt::format("--id {}: no such node in the topology", id));
    }
    return std::uint32_t(value);
  }
  for (const char* var : {"SLURM_PROCID", "OMPI_COMM_WORLD_RANK"}) {
    const char* value = std::getenv(var);
    if (value == nullptr) continue;
    const std::size_t rank = std::strtoull(value, nullptr, 10);
    if (rank >= topology.size()) {
      throw node::ConfigError(fmt::format("--id auto: {}={} but the topology has {} nodes", var,
                                          value, topology.size()));
    }
    return topology.nodes()[rank].id;
  }
  throw node::ConfigError("--id auto: neither SLURM_PROCID nor OMPI_COMM_WORLD_RANK is set");
}

std::shared_ptr<spdlog::logger> makeLogger(std::uint32_t id, const std::string& out) {
  std::vector<spdlog::sink_ptr> sinks{std::make_shared<spdlog::sinks::stderr_color_sink_mt>()};
  if (!out.empty()) {
    sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(
        (std::filesystem::path(out) / fmt::format("node-{}.log", id)).string(),
        /*truncate=*/false));
  }
  auto log =
      std::make_shared<spdlog::logger>(fmt::format("node-{}", id), sinks.begin(), sinks.end());
  log->set_pattern(fmt::format("[%Y-%m-%d %H:%M:%S.%e] [%l] [node {}] %v", id));
  log->set_level(spdlog::get_level());  // --log-level
  log->flush_on(spdlog::level::info);
  return log;
}

int runNode(const NodeOptions& o) {
  node::PeerSetup setup;
  std::uint32_t id = 0;
  try {
    setup.config = node::loadConfig(o.config, o.sets);
    setup.topology =
        std::make_shared<const topologies::Topology>(topologies::loadTopology(o.topology));
    id = resolveId(o.id, *setup.topology);
  } catch (const node::ConfigError& e) {
    spdlog::error("{}", e.what());
    return kExitBadInput;
  } catch (const topologies::TopologyError& e) {
    spdlog::error("{}", e.what());
    return kExitBadInput;
  }
  if (!o.out.empty()) std::filesystem::create_directories(o.out);
  auto log = makeLogger(id, o.out);
  const node::Config config = setup.config;  // a copy: setup moves into the PeerNode below
  node::useThreads(config.threads);
  try {
    const kernels::Backend backend = kernels::useBackend(config.device);
    log->info("compute backend: {} (device: {}; this build: {})", kernels::backendName(backend),
              config.device, kernels::backendSummary());
  } catch (const std::exception& e) {
    log->error("{}: {}", o.config, e.what());
    return kExitBadInput;
  }
  setup.id = id;
  setup.attack = o.attack;
  setup.rounds = o.rounds;
  setup.resume = o.resume;
  setup.log = log;
  setup.join_timeout = std::chrono::milliseconds(o.join_timeout_ms);
  const topologies::NodeSpec self = setup.topology->node(id);
  setup.listen_host = o.listen_host.empty() ? self.host : o.listen_host;
  if (!config.checkpoint.dir.empty()) {
    setup.checkpoint_dir =
        std::filesystem::path(config.checkpoint.dir) / fmt::format("node-{}", id);
  } else if (!o.out.empty() && config.checkpoint.every > 0) {
    setup.checkpoint_dir =
        std::filesystem::path(o.out) / "checkpoints" / fmt::format("node-{}", id);
  }
  if ((o.resume || config.checkpoint.every > 0) && setup.checkpoint_dir.empty()) {
    log->error(
        "{}: no checkpoint folder: set checkpoint.dir, or give --out (with checkpoint.every > 0)",
        o.resume ? "--resume" : "checkpoint.every");
    return kExitBadInput;
  }

  try {
    switch (node::runDaemon(std::move(setup), o.out)) {
      case node::DaemonExit::kCompleted:
        return kExitOk;
      case node::DaemonExit::kDiverged:
        return kExitDiverged;
      case node::DaemonExit::kIncomplete:
        return kExitFailure;
    }
  } catch (const node::ConfigError& e) {
    log->error("{}", e.what());
    return kExitBadInput;
  } catch (const node::DataError& e) {
    log->error("{}", e.what());
    return kExitBadInput;
  } catch (const node::CheckpointError& e) {
    log->error("{}", e.what());
    return kExitFailure;
  } catch (const std::exception& e) {  // ports taken, TLS files unreadable
    log->error("cannot start: {}", e.what());
    return kExitFailure;
  }
  return kExitFailure;
}

}  // namespace

Command addNodeCommand(CLI::App& root) {
  auto opts = std::make_shared<NodeOptions>();
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
                  "this node's id in the topology, or auto (SLURM_PROCID / OMPI_COMM_WORLD_RANK)")
      ->required();
  app->add_option("--rounds", opts->rounds, "number of rounds (overrides rounds.count)")
      ->check(CLI::PositiveNumber);
  app->add_option("--set", opts->sets, "override a config field: path=value, e.g. mixing.rule=mean")
      ->allow_extra_args(false);
  app->add_option(
      "--attack", opts->attack,
      "run as a Byzantine peer with this attack: robust/'s vector attacks (also as "
      "equivocate:NAME, crafted per target), labelflip, silent, garbage, wrong_dim, replay, "
      "stall, round_lie, resync_flood, keyframe_spam (docs/PROTOCOL.md)");
  app->add_option("--out", opts->out, "folder for node-K.jsonl, node-K.log (and checkpoints)");
  app->add_flag("--resume", opts->resume, "start from the newest usable checkpoint");
  app->add_option("--listen-host", opts->listen_host,
                  "address to bind (default: the topology's host)");
  app->add_option("--join-timeout-ms", opts->join_timeout_ms,
                  "round 0 waits this long for every neighbour to connect (default 30000)");
  return {app, [opts] { return runNode(*opts); }};
}

}  // namespace phalanx::tools
