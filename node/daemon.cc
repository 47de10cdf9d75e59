#include "node/daemon.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <asio.hpp>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <optional>

#include "node/data_source.h"
#include "node/http_endpoint.h"
#include "node/npy.h"
#include "node/peer_node.h"

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

DaemonExit runDaemon(PeerSetup setup, const std::filesystem::path& out) {
  const Config config = setup.config;
  const std::uint32_t id = setup.id;
  const topologies::NodeSpec self = setup.topology->node(id);
  auto log = setup.log ? setup.log : spdlog::default_logger();
  asio::io_context io(1);
  std::unique_ptr<PeerNode> peer;
  std::unique_ptr<HttpEndpoint> http;
  TrainTest data = loadData(config.data, config.seed);
  setup.shard = shardOf(config.data, data.train, setup.topology->size(),
                        setup.topology->indexOf(id), config.seed);
  setup.test = std::make_shared<const Dataset>(std::move(data.test));
  const std::string host = setup.listen_host;
  peer = std::make_unique<PeerNode>(io, std::move(setup));
  peer->listen();
  if (self.metrics_port > 0) {
    // The model and the faults live on the round loop's thread.
    ModelSource model = [&io, &peer] {
      return onLoop<std::vector<float>>(io, [&peer] {
        return std::vector<float>(peer->parameters().begin(), peer->parameters().end());
      });
    };
    ControlAccess control{
        .token = config.control.token,
        .remote = config.control.remote,
        .apply = [&io, &peer](const std::string& command) -> std::optional<std::string> {
          // Unanswered within the limit (nullopt): queued behind a busy or hung loop.
          return onLoop<std::string>(io, [&peer, command] {
            std::string error = peer->inject(command);
            if (error.empty() && command.starts_with("crash")) std::_Exit(137);  // as kill -9
            return error;
          });
        }};
    http = std::make_unique<HttpEndpoint>(host, self.metrics_port, std::move(model),
                                          std::move(control));
  }
  std::ofstream jsonl;
  if (!out.empty()) {
    jsonl.open(out / fmt::format("node-{}.jsonl", id), std::ios::app);
  }
  const auto publish = [&] {
    if (!http) return;
    peer->refreshMetrics();
    http->publish(peer->metrics().prometheus());
  };
  publish();

  asio::signal_set signals(io, SIGINT, SIGTERM);
  bool completed = false;
  signals.async_wait([&](const asio::error_code& ec, int signal) {
    if (ec) return;
    log->info("round {}: signal {}: leaving", peer->openRound(), signal);
    peer->stop();
  });
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
  if (peer->diverged()) return DaemonExit::kDiverged;
  return completed ? DaemonExit::kCompleted : DaemonExit::kIncomplete;
}

}  // namespace phalanx::node
