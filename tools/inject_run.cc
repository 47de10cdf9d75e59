#include "tools/inject_run.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "node/config.h"
#include "node/fault_command.h"
#include "tools/command.h"
#include "tools/launch.h"
#include "topologies/topology.h"

// Last: it pulls in <resolv.h>, whose _res macro breaks Eigen's headers.
#include <httplib.h>

namespace phalanx::tools {
namespace {

namespace fs = std::filesystem;

// The pid `phalanx launch` recorded for `id` in RUN/pids.json.
std::optional<pid_t> launchedPid(const std::filesystem::path& run, std::uint32_t id) {
  const auto pids = readPids(run);
  if (const auto it = pids.find(id); it != pids.end()) return it->second;
  return std::nullopt;
}

// What inject did: a line for people, or with --json one object — node, fault, outcome
// ("applied": the node confirmed it; "delivered": a crash's connection closed under the
// request; "signalled": a process fault sent) and `where` (pid or remote host).
void said(const InjectOptions& o, const std::string& fault, const std::string& outcome,
          const nlohmann::json& where, const std::string& line) {
  if (!o.json) {
    fmt::print("{}\n", line);
    return;
  }
  nlohmann::ordered_json j;
  j["node"] = o.node;
  j["fault"] = fault;
  j["outcome"] = outcome;
  if (!where.is_null()) j["where"] = where;
  fmt::print("{}\n", j.dump());
}

}  // namespace

int runInject(const InjectOptions& o) {
  std::string command;
  for (const auto& w : o.fault) command += (command.empty() ? "" : " ") + w;
  std::unique_ptr<topologies::Topology> topology;
  try {
    topology = std::make_unique<topologies::Topology>(topologies::loadTopology(o.topology));
    topology->node(o.node);
  } catch (const topologies::TopologyError& e) {
    spdlog::error("{}", e.what());
    return kExitBadInput;
  }
  const std::string verb = o.fault.front();
  if (verb == "kill" || verb == "stop" || verb == "cont") {
    if (o.run.empty()) {
      spdlog::error(
          "inject {}: a process fault needs --run DIR (the --out of the phalanx launch that "
          "started it)",
          verb);
      return kExitBadInput;
    }
    const auto pid = launchedPid(o.run, o.node);
    const auto remote = readRemotePids(o.run);
    if (const auto it = remote.find(o.node); !pid && it != remote.end()) {
      // A peer on another host: the signal goes through ssh to the pid it wrote there.
      const std::string name = verb == "kill" ? "KILL" : verb == "stop" ? "STOP" : "CONT";
      if (signalRemote(it->second, name) != 0) {
        spdlog::error("inject {}: node {} on {}: the remote kill failed", verb, o.node,
                      it->second.ssh.back());
        return kExitFailure;
      }
      said(o, verb, "signalled",
           {{"host", it->second.ssh.back()}, {"pid_file", it->second.pid_file}},
           fmt::format("node {}: {} (on {}, pid in {})", o.node, verb, it->second.ssh.back(),
                       it->second.pid_file));
      return kExitOk;
    }
    if (!pid) {
      spdlog::error("inject {}: no pid for node {} in {}/pids.json", verb, o.node, o.run);
      return kExitBadInput;
    }
    const int signal = verb == "kill" ? SIGKILL : verb == "stop" ? SIGSTOP : SIGCONT;
    if (::kill(*pid, signal) != 0) {
      spdlog::error("inject {}: node {} (pid {}): {}", verb, o.node, *pid, std::strerror(errno));
      return kExitFailure;
    }
    said(o, verb, "signalled", {{"pid", *pid}},
         fmt::format("node {}: {} (pid {})", o.node, verb, *pid));
    return kExitOk;
  }
  // Parsed here, before anything is sent: a typo is the operator's to fix, not the node's.
  const auto fault = node::parseFaultCommand(command);
  if (!fault) {
    spdlog::error("inject: {}", fault.error());
    return kExitBadInput;
  }
  if (std::holds_alternative<node::fault::Restart>(*fault)) {
    spdlog::error(
        "inject restart: a running node cannot restart itself; start it again with `phalanx "
        "node --resume` (restart is a fault of `phalanx simulate --faults`)");
    return kExitBadInput;
  }
  command = node::faultText(*fault);
  std::string token = o.token;
  try {
    // The launch's own token (OUT/control.token) when --run names it and nothing else does.
    const fs::path launched = o.run.empty() ? fs::path() : fs::path(o.run) / "control.token";
    std::string file = o.token_file;
    if (file.empty() && o.config.empty() && !launched.empty() && fs::exists(launched))
      file = launched.string();
    if (token.empty() && !file.empty()) token = node::controlToken({.token_file = file});
    if (token.empty() && !o.config.empty())
      token = node::controlToken(node::loadConfig(o.config).control);
  } catch (const node::ConfigError& e) {
    spdlog::error("{}", e.what());
    return kExitBadInput;
  }
  if (token.empty()) {
    spdlog::error(
        "inject: no control token: give --run DIR (a launch's folder), --token-file, or --config "
        "with control.token set");
    return kExitBadInput;
  }
  const auto& spec = topology->node(o.node);
  httplib::Client http(spec.host, spec.metrics_port);
  http.set_connection_timeout(std::chrono::seconds(2));
  http.set_read_timeout(std::chrono::seconds(5));
  const auto r =
      http.Post("/control", {{"Authorization", "Bearer " + token}}, command, "text/plain");
  if (!r) {
    // A crash takes the node down before it answers: the request went through (the connection
    // closed under it), which a node that was never reached cannot say.
    if (std::holds_alternative<node::fault::Crash>(*fault) &&
        r.error() != httplib::Error::Connection && r.error() != httplib::Error::ConnectionTimeout) {
      said(o, command, "delivered", nullptr,
           fmt::format("node {}: crash (the connection closed before an answer)", o.node));
      return kExitOk;
    }
    spdlog::error("inject: node {} at {}:{} did not answer ({})", o.node, spec.host,
                  spec.metrics_port, httplib::to_string(r.error()));
    return kExitFailure;
  }
  if (r->status == 200) {
    said(o, command, "applied", nullptr, fmt::format("node {}: {}", o.node, command));
    return kExitOk;
  }
  if (r->status == 504) {
    spdlog::error(
        "inject: node {} did not apply '{}' in time (busy or hung; it is queued and may still "
        "apply)",
        o.node, command);
    return kExitFailure;
  }
  spdlog::error("inject: node {} answered {}: {}", o.node, r->status, r->body);
  return r->status == 400 ? kExitBadInput : kExitFailure;
}

}  // namespace phalanx::tools
