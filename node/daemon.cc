#include "node/daemon.h"

#include <fmt/format.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <asio.hpp>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <system_error>

#include "base/log_format.h"
#include "kernels/backend.h"
#include "kernels/device.h"
#include "node/http_endpoint.h"
#include "node/npy.h"
#include "node/peer_node.h"
#include "train/local_trainer.h"

namespace phalanx::node {
namespace {

// Runs `task` on the round loop's thread and waits up to `limit` for its result; nullopt when
// the loop is busy, hung or gone (the task may still run later). For the HTTP thread.
template <typename T>
std::optional<T> onLoop(asio::io_context& io, std::function<T()> task,
                        std::chrono::milliseconds limit = std::chrono::seconds(2)) {
  auto done = std::make_shared<std::promise<T>>();
  auto result = done->get_future();
  asio::post(io, [task = std::move(task), done] { done->set_value(task()); });
  if (result.wait_for(limit) != std::future_status::ready) return std::nullopt;
  return result.get();
}

}  // namespace

std::uint32_t resolveNodeId(const std::string& id, const topologies::Topology& topology) {
  if (id != "auto") {
    std::size_t used = 0;
    unsigned long value = 0;
    try {
      value = std::stoul(id, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != id.size() || id.empty()) {
      throw ConfigError(fmt::format("--id {}: expected a node id or auto", id));
    }
    if (!topology.contains(std::uint32_t(value))) {
      throw ConfigError(fmt::format("--id {}: no such node in the topology", id));
    }
    return std::uint32_t(value);
  }
  for (const char* var : {"PHALANX_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"}) {
    const char* value = std::getenv(var);
    if (value == nullptr) continue;
    const std::size_t rank = std::strtoull(value, nullptr, 10);
    if (rank >= topology.size()) {
      throw ConfigError(fmt::format("--id auto: {}={} but the topology has {} nodes", var, value,
                                    topology.size()));
    }
    return topology.nodes()[rank].id;
  }
  throw ConfigError(
      "--id auto: none of PHALANX_RANK, SLURM_PROCID and OMPI_COMM_WORLD_RANK is set");
}

namespace {

std::shared_ptr<spdlog::logger> makeLogger(std::uint32_t id, const std::string& out) {
  std::vector<spdlog::sink_ptr> sinks{std::make_shared<spdlog::sinks::stderr_color_sink_mt>()};
  if (!out.empty()) {
    sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(
        (std::filesystem::path(out) / fmt::format("node-{}.log", id)).string(),
        /*truncate=*/false));
  }
  auto log =
      std::make_shared<spdlog::logger>(fmt::format("node-{}", id), sinks.begin(), sinks.end());
  log->set_pattern(base::kLogPattern);
  log->set_level(spdlog::get_level());  // --log-level
  log->flush_on(spdlog::level::info);
  return log;
}

// TLS unless the config opts out: the certificates found (OUT/certs when the config names
// none, where `phalanx launch` writes them) before anything starts; `none` said aloud.
void checkSecurity(PeerSetup& setup, const std::string& out) {
  SecurityConfig& security = setup.config.security;
  if (security.mode == SecurityMode::kNone) {
    setup.log->warn(
        "security: none — peers are not authenticated: anyone who reaches this node's port can "
        "open a connection in a neighbour's name, claim rounds and send vectors for it, and read "
        "the traffic (docs/PROTOCOL.md, 'With and without TLS'). Use it only on a network you "
        "control; the default, security.mode: tls, needs certificates from `phalanx certs`.");
    return;
  }
  if (security.usesRunCertificates() && !out.empty()) {
    security.dir = (std::filesystem::path(out) / "certs").string();
  }
  checkCertificates(certificateFiles(security, setup.id), setup.id);
  if (security.statements) {
    loadStatementKeys(setup);
  } else {
    setup.log->warn(
        "security.statements: false — round vectors are not signed: an equivocating peer is "
        "never proven (docs/PROTOCOL.md, 'Equivocation')");
  }
}

}  // namespace

PeerSetup daemonSetup(const DaemonRequest& r) {
  PeerSetup setup;
  setup.config = loadConfig(r.config, r.sets);
  setup.topology =
      std::make_shared<const topologies::Topology>(topologies::loadTopology(r.topology));
  setup.id = resolveNodeId(r.id, *setup.topology);
  const Config& config = setup.config;
  const kernels::Backend backend = [&] {
    try {
      return kernels::useBackend(config.device);
    } catch (const std::exception& e) {
      throw ConfigError(fmt::format("{}: device: {}", r.config, e.what()));
    }
  }();
  if (!r.out.empty()) std::filesystem::create_directories(r.out);
  setup.log = makeLogger(setup.id, r.out);
  train::useThreads(config.threads);
  setup.log->info("compute backend: {} (device: {}; this build: {})",
                  kernels::kBackends.name(backend), kernels::kDevices.name(config.device),
                  kernels::backendSummary());
  if (!r.attack.empty()) {
    auto spec = AttackSpec::parse(r.attack);
    if (!spec) throw ConfigError("--attack: " + spec.error());
    setup.attack = *spec;
  }
  setup.rounds = r.rounds;
  setup.resume = r.resume;
  setup.join_timeout = r.join_timeout;
  const topologies::NodeSpec self = setup.topology->node(setup.id);
  setup.listen_host = r.listen_host.empty() ? self.host : r.listen_host;
  checkSecurity(setup, r.out);
  // The control token: the config's, else OUT/control.token where `phalanx launch` writes it.
  ControlConfig& control = setup.config.control;
  if (control.token.empty() && control.token_file.empty() && !r.out.empty() &&
      std::filesystem::exists(std::filesystem::path(r.out) / "control.token")) {
    control.token_file = (std::filesystem::path(r.out) / "control.token").string();
  }
  control.token = controlToken(control);
  if (!config.checkpoint.dir.empty()) {
    setup.checkpoint_dir =
        std::filesystem::path(config.checkpoint.dir) / fmt::format("node-{}", setup.id);
  } else if (!r.out.empty() && config.checkpoint.every > 0) {
    setup.checkpoint_dir =
        std::filesystem::path(r.out) / "checkpoints" / fmt::format("node-{}", setup.id);
  }
  if ((r.resume || config.checkpoint.every > 0) && setup.checkpoint_dir.empty()) {
    throw ConfigError(fmt::format(
        "{}: no checkpoint folder: set checkpoint.dir, or give --out (with checkpoint.every > 0)",
        r.resume ? "--resume" : "checkpoint.every"));
  }
  return setup;
}

DaemonExit runDaemon(PeerSetup setup, const std::filesystem::path& out, DaemonOptions options) {
  const Config config = setup.config;
  // The kernels' OpenMP team size is the calling thread's: the Python package runs this on a
  // thread of its own, which would otherwise use every core and leave its idle workers spinning
  // beside the script's own compute.
  train::useThreads(config.threads);
  const std::uint32_t id = setup.id;
  const topologies::NodeSpec self = setup.topology->node(id);
  auto log = setup.log ? setup.log : spdlog::default_logger();
  asio::io_context io(1);
  std::unique_ptr<PeerNode> peer;
  std::unique_ptr<HttpEndpoint> http;
  if (!setup.learner) {
    RunData run = loadRunData(config, setup.topology->size());
    giveShard(setup, run, setup.topology->indexOf(id));
    setup.test = std::make_shared<const train::Dataset>(std::move(run.data.test));
  }
  const std::string host = setup.listen_host;
  const std::uint16_t port = setup.listen_port.value_or(self.port);
  // A resumed node continues its record (a replayed round supersedes its earlier line); a node
  // started afresh replaces any earlier one, which would otherwise read as part of this run.
  const auto record_mode = setup.resume ? std::ios::app : std::ios::trunc;
  peer = std::make_unique<PeerNode>(io, std::move(setup));
  try {
    peer->listen();
  } catch (const std::system_error& e) {
    // The port is the topology's (or --listen's): name it, as launch's own check does.
    throw topologies::TopologyError(
        fmt::format("node {}: cannot listen on {}:{}: {} (another run still going?)", id, host,
                    port, e.code().message()));
  }
  if (self.metrics_port > 0) {
    // The model and the faults live on the round loop's thread.
    ModelSource model = [&io, &peer] {
      return onLoop<std::vector<float>>(io, [&peer] {
        return std::vector<float>(peer->parameters().begin(), peer->parameters().end());
      });
    };
    ControlAccess control{.token = config.control.token,
                          .remote = config.control.remote,
                          .apply = [&io, &peer](const FaultCommand& command) -> ControlAnswer {
                            // Unanswered within the limit (nullopt): queued behind a busy or hung
                            // loop.
                            const auto answer = onLoop<ControlAnswer>(io, [&peer, command] {
                              const auto applied = peer->inject(command);
                              if (applied && std::holds_alternative<fault::Crash>(command))
                                std::_Exit(137);  // as kill -9
                              return applied ? ControlAnswer{}
                                             : ControlAnswer{.outcome = FaultOutcome::kRefused,
                                                             .reason = applied.error()};
                            });
                            return answer ? *answer
                                          : ControlAnswer{.outcome = FaultOutcome::kNotAnswered};
                          }};
    http = std::make_unique<HttpEndpoint>(host, self.metrics_port, std::move(model),
                                          std::move(control));
  }
  std::ofstream jsonl;
  if (!out.empty()) {
    jsonl.open(out / fmt::format("node-{}.jsonl", id), std::ios::out | record_mode);
  }
  const auto publish = [&] {
    if (!http) return;
    peer->refreshMetrics();
    http->publish(peer->metrics().prometheus());
  };
  publish();

  asio::signal_set signals(io);
  if (options.signals) {
    signals.add(SIGINT);
    signals.add(SIGTERM);
    // A peer started over `ssh -tt` gets SIGHUP when its session closes (the launcher was
    // stopped or lost): it leaves as cleanly as on SIGTERM instead of dying mid-round.
    signals.add(SIGHUP);
    signals.async_wait([&](const asio::error_code& ec, int signal) {
      if (ec) return;
      log->info("round {}: signal {}: leaving", peer->openRound(), signal);
      peer->stop();
    });
  }
  bool completed = false;
  if (options.on_ready) options.on_ready(io, *peer);
  peer->connect();
  peer->start(
      [&](const RoundRecord& r) {
        if (jsonl.is_open()) jsonl << roundRecordJson(id, r) << '\n' << std::flush;
        publish();
      },
      [&] {
        completed = peer->openRound() >= peer->rounds();
        signals.cancel();
        publish();
        // The final parameters beside the logs: what the monitor's consensus distance and
        // the report read after the run.
        if (completed && !out.empty() && peer->role() == PeerNode::Role::kHonest) {
          const auto file = out / fmt::format("node-{}.npy", id);
          const std::size_t shape[] = {peer->dimension()};
          try {
            writeNpy(file.string() + ".tmp", shape, peer->parameters());
            std::filesystem::rename(file.string() + ".tmp", file);
          } catch (const std::exception& e) {
            log->warn("round {}: final model not written: {}", peer->openRound(), e.what());
          }
        }
      });
  io.run();
  if (options.on_stopped) options.on_stopped();
  if (peer->diverged()) return DaemonExit::kDiverged;
  return completed ? DaemonExit::kCompleted : DaemonExit::kIncomplete;
}

}  // namespace phalanx::node
