#include "tools/launch_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <asio.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/files.h"
#include "net/certs.h"
#include "node/config.h"
#include "tools/churn.h"
#include "tools/command.h"
#include "tools/launch.h"
#include "tools/monitor.h"
#include "tools/report.h"
#include "tools/run_analysis.h"
#include "tools/run_folder.h"
#include "tools/supervisor.h"
#include "topologies/topology.h"

namespace phalanx::tools {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The addresses this machine answers on, plus the loopback names.
std::set<std::string> localHosts() {
  std::set<std::string> out{"127.0.0.1", "localhost", "::1", "0.0.0.0"};
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0) out.insert(name);
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a; a = a->ifa_next) {
      if (!a->ifa_addr || (a->ifa_addr->sa_family != AF_INET && a->ifa_addr->sa_family != AF_INET6))
        continue;
      char host[NI_MAXHOST] = {};
      const socklen_t size =
          a->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
      if (getnameinfo(a->ifa_addr, size, host, sizeof host, nullptr, 0, NI_NUMERICHOST) == 0)
        out.insert(host);
    }
    freeifaddrs(list);
  }
  return out;
}

// In use: something accepts connections there, or the port cannot be bound. (Bound with
// SO_REUSEADDR and SO_REUSEPORT, as the nodes' listeners are: a previous run's connections in
// TIME_WAIT do not count, and they would otherwise block the check for a minute.)
bool portFree(const std::string& host, std::uint16_t port) {
  asio::io_context io;
  asio::error_code ec;
  const auto address = asio::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  if (ec) return true;  // a name we cannot bind here; the node reports it
  asio::ip::tcp::socket probe(io);
  probe.connect({address, port}, ec);
  if (!ec) return false;
  asio::ip::tcp::acceptor a(io);
  a.open(address.is_v6() ? asio::ip::tcp::v6() : asio::ip::tcp::v4(), ec);
  a.set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
  a.set_option(asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>(true), ec);
  a.bind({address, port}, ec);
  return !ec;
}

// 128 random bits as hex: a control token for a run whose config has none.
std::string randomToken() {
  std::random_device device;
  std::string out;
  for (int i = 0; i < 4; ++i) out += fmt::format("{:08x}", device());
  return out;
}

// The script and its arguments, with an absolute path (the peers may start elsewhere).
std::vector<std::string> scriptArgv(const LaunchRunOptions& o) {
  if (o.script.empty()) return {};
  std::vector<std::string> argv{fs::absolute(o.script).string()};
  argv.insert(argv.end(), o.script_args.begin(), o.script_args.end());
  return argv;
}

// This build's Python package ahead of the caller's PYTHONPATH.
std::string pythonPath(const std::string& package) {
  std::string path = package;
  if (const char* own = std::getenv("PYTHONPATH"); own && *own) {
    path += (path.empty() ? "" : ":") + std::string(own);
  }
  return path;
}

// OUT/pids.json for `phalanx inject --run`: the local processes, and how to reach the remote
// ones (the ssh client's pid would only end the session, not signal the peer).
void writeLaunchPids(const std::string& out, const LaunchPlan& plan, const Supervisor& peers) {
  std::map<std::uint32_t, pid_t> pids;
  std::map<std::uint32_t, RemoteProcess> remote;
  const auto running = peers.pids();
  for (const auto& p : plan.peers) {
    if (!p.local) {
      remote[p.id] = p.remote;
    } else if (const auto it = running.find(p.id); it != running.end()) {
      pids[p.id] = it->second;
    }
  }
  writePids(out, pids, remote);
}

// Without a shared folder: the topology and config into the run folder of every other host,
// where planLaunch pointed the remote peers. False (and said) when a host could not be reached.
// Copies `from` to `name` under the remote peer's folder (umask 077: a key stays its owner's).
bool copyToRemote(const LaunchPeer& p, const std::string& from, const std::string& name) {
  const fs::path to = fs::path(p.out) / name;
  const auto argv = remoteCommand(
      p.remote.ssh, fmt::format("umask 077 && mkdir -p {} && cat > {}",
                                shellQuote(to.parent_path().string()), shellQuote(to.string())));
  if (runCommand(argv, from) == 0) return true;
  spdlog::error("launch: cannot copy {} to {} ({})", name, p.remote.ssh.back(),
                LaunchPeer{.argv = argv}.shellCommand());
  return false;
}

// Without a shared folder: topology and config to each remote host, with `token` the control
// token's file, and with `certs` (the run's TLS folder) the CA and each remote peer's own
// certificate and key — no other node's key.
bool copyRunFiles(const LaunchPlan& plan, const std::string& topology, const std::string& config,
                  const std::optional<fs::path>& certs, const std::optional<fs::path>& token) {
  std::set<std::vector<std::string>> done;
  for (const auto& p : plan.peers) {
    if (p.local) continue;
    if (done.insert(p.remote.ssh).second) {
      if (!copyToRemote(p, topology, "topology.yaml") || !copyToRemote(p, config, "config.yaml"))
        return false;
      if (certs && !copyToRemote(p, net::caCertFile(*certs).string(), "certs/ca.pem")) return false;
      if (token && !copyToRemote(p, token->string(), "control.token")) return false;
    }
    if (certs && (!copyToRemote(p, net::nodeCertFile(*certs, p.id).string(),
                                fmt::format("certs/node-{}.pem", p.id)) ||
                  !copyToRemote(p, net::nodeKeyFile(*certs, p.id).string(),
                                fmt::format("certs/node-{}.key", p.id))))
      return false;
  }
  return true;
}

// Without a shared folder: each remote peer's results back into OUT, where the summary reads
// them. A file the peer did not write (a Byzantine peer's model) is simply absent.
void copyResultsBack(const LaunchPlan& plan, const std::string& out) {
  for (const auto& p : plan.peers) {
    if (p.local) continue;
    for (const char* kind : {"jsonl", "npy", "log"}) {
      const std::string name = fmt::format("node-{}.{}", p.id, kind);
      const fs::path to = fs::path(out) / name, part = fs::path(out) / (name + ".part");
      const int rc = runCommand(
          remoteCommand(p.remote.ssh,
                        fmt::format("cat {} 2>/dev/null", shellQuote(p.out + "/" + name))),
          {}, part);
      std::error_code ec;
      if (rc == 0) {
        fs::rename(part, to, ec);
      } else {
        fs::remove(part, ec);
        if (std::string_view(kind) != "npy")
          spdlog::warn("launch: could not copy {} back from {}", name, p.remote.ssh.back());
      }
    }
  }
}

// A peer that died (or never started): how, and the end of its output, on the console — the
// cause (a script's missing module, a refused config) is otherwise only in stdout-K.log. The
// first three in full; the others by their ending only.
void tellWhyItDied(std::uint32_t id, std::optional<int> wait_status, const std::string& out,
                   std::size_t nth) {
  const fs::path log = fs::path(out) / fmt::format("stdout-{}.log", id);
  spdlog::error("launch: peer {} {}{}", id,
                wait_status ? "ended with " + exitText(*wait_status) : "never started",
                nth <= 3 ? fmt::format("; the end of {}:", log.string()) : "");
  if (nth > 3) return;
  for (const std::string& line : lastLines(log, 5)) fmt::print(stderr, "    | {}\n", line);
}

// SIGTERM to every running peer — a remote one's through ssh to its pid, so its ssh session
// ends when the peer has said Goodbye and written its logs, carrying its exit code — and
// SIGKILL `grace` later to what still runs here (a remote peer's session then hangs it up).
void stopPeers(const LaunchPlan& plan, Supervisor& peers, std::chrono::milliseconds grace) {
  for (const auto& p : plan.peers) {
    if (!peers.running(p.id)) continue;
    if (p.local || signalRemote(p.remote, "TERM") != 0) {
      peers.signal(p.id, SIGTERM);
    }
  }
  peers.killAfter(grace);
}

// The size of a peer's node-K.jsonl (0 while it has none): it grows with every round it logs.
std::uintmax_t recordBytes(const std::string& out, std::uint32_t id) {
  std::error_code ec;
  const auto size = fs::file_size(fs::path(out) / fmt::format("node-{}.jsonl", id), ec);
  return ec ? 0 : size;
}

// One pass of --churn: a kill when one is due, and the restarts whose downtime is over (with
// --resume). Only peers started here take part, and nobody is killed once an honest peer has
// finished (the run is ending: a peer killed now would come back to nobody). A restarted peer
// whose neighbours have all left still finishes, on its own. A restarted peer is not killed
// again before it has logged a round (`rejoining`: its record's size at the restart): on a
// loaded machine a start can take longer than the mean time between kills, and peers killed
// while still starting would keep the run from ever ending.
void churnStep(Churn& churn, const LaunchPlan& plan, const std::set<std::uint32_t>& byzantine,
               Supervisor& peers, const std::map<std::uint32_t, int>& status,
               const std::string& out, std::map<std::uint32_t, std::uintmax_t>& rejoining) {
  const auto now = Clock::now();
  std::vector<std::uint32_t> candidates;
  std::set<std::uint32_t> unreaped;
  bool ending = false;
  for (const auto& p : plan.peers) {
    if (!p.local || byzantine.contains(p.id)) continue;
    if (churn.down(p.id)) {
      if (peers.running(p.id)) unreaped.insert(p.id);
    } else if (peers.running(p.id)) {
      if (const auto r = rejoining.find(p.id); r != rejoining.end()) {
        if (recordBytes(out, p.id) <= r->second) continue;  // still starting or catching up
        rejoining.erase(r);
      }
      candidates.push_back(p.id);
    } else if (const auto s = status.find(p.id);
               s != status.end() && endingOf(s->second) == Ending::kCompleted) {
      ending = true;
    }
  }
  if (ending) candidates.clear();
  if (const auto victim = churn.killDue(now, candidates)) {
    spdlog::warn("launch: churn: SIGKILL to peer {} (restarts with --resume in {} s)", *victim,
                 churn.downSeconds());
    peers.signal(*victim, SIGKILL);
  }
  bool restarted = false;
  for (const std::uint32_t id : churn.restartsDue(now, unreaped)) {
    const auto p = std::find_if(plan.peers.begin(), plan.peers.end(),
                                [id](const LaunchPeer& q) { return q.id == id; });
    std::vector<std::string> argv = p->argv;
    argv.push_back("--resume");
    spdlog::warn("launch: churn: peer {} restarts from its newest checkpoint", id);
    rejoining[id] = recordBytes(out, id);
    restarted |= peers.spawn(id, argv, fs::path(out) / fmt::format("stdout-{}.log", id));
  }
  if (restarted) writeLaunchPids(out, plan, peers);  // `inject --run` signals the new ones
}

}  // namespace

int runLaunch(const LaunchRunOptions& o) {
  LaunchPlan plan;
  std::string token;
  std::optional<fs::path> certs;  // this run's TLS folder, when launch makes the certificates
  bool fresh_token = false;       // made here: written to OUT/control.token
  std::vector<std::string> sets = o.sets;
  std::shared_ptr<const topologies::Topology> topology;
  std::set<std::uint32_t> byzantine;
  try {
    topology = std::make_shared<const topologies::Topology>(topologies::loadTopology(o.topology));
    byzantine = parseIdList(o.byzantine);  // planLaunch refuses an id the topology lacks
    const std::vector<std::string> gpus = o.script.empty()
                                              ? std::vector<std::string>{}
                                              : gpuList(o.gpus, std::getenv("CUDA_VISIBLE_DEVICES"),
                                                        o.gpus == "auto" ? detectedGpus() : 0);
    const auto plan_with = [&](const std::vector<std::string>& extra_sets) {
      return planLaunch({.topology_file = fs::absolute(o.topology).string(),
                         .config_file = fs::absolute(o.config).string(),
                         .out = fs::absolute(o.out).string(),
                         .binary = o.binary,
                         .remote_binary = o.remote_binary,
                         .ssh = o.ssh,
                         .remote_out = o.remote_out,
                         .rounds = o.rounds,
                         .sets = extra_sets,
                         .byzantine = byzantine,
                         .attack = o.attack,
                         .wrap = o.wrap,
                         .script = scriptArgv(o),
                         .python = o.python,
                         .python_path = pythonPath(o.python_package),
                         .gpus = gpus},
                        *topology, localHosts());
    };
    if (o.churn > 0 && !o.script.empty()) {
      throw std::invalid_argument(
          "--churn restarts `phalanx node` peers with --resume; a script's peers keep their own "
          "state");
    }
    plan = plan_with(sets);
    // The config as the peers will read it: a bad field fails here, once, not ten times.
    const node::Config config = node::loadConfig(o.config, plan.sets);
    if (o.churn > 0 && config.checkpoint.every == 0) {
      // A restarted peer resumes from its newest checkpoint: without any it would start over.
      spdlog::info("launch: --churn: checkpoints every 10 rounds (checkpoint.every was 0)");
      sets.push_back("checkpoint.every=10");
      plan = plan_with(sets);
    }
    if (config.security.usesRunCertificates()) {
      // TLS, and no certificates named: this run's own, in OUT/certs, where each peer looks
      // (`phalanx node --out OUT`).
      certs = fs::absolute(o.out) / "certs";
    }
    token = node::controlToken(config.control);
    if (token.empty()) {
      // GET /model needs the control token: a config without one gets a fresh one for this
      // run, so the monitor can read the honest models (consensus distance). It reaches the
      // peers in OUT/control.token (0600), never on a command line, command.txt or the report.
      token = randomToken();
      fresh_token = true;
    }
  } catch (const base::Error& e) {
    spdlog::error("{}", e.what());
    return exitCodeOf(e);
  } catch (const std::invalid_argument& e) {
    spdlog::error("launch: {}", e.what());
    return kExitBadInput;
  }
  if (o.dry_run) {
    for (const auto& p : plan.peers) fmt::print("{}\n", p.shellCommand());
    return kExitOk;
  }
  for (const auto& p : plan.peers) {
    if (!p.local || !o.wrap.empty()) continue;  // wrapped peers bind inside their namespaces
    const auto& spec = topology->node(p.id);
    for (const std::uint16_t port : {spec.port, spec.metrics_port}) {
      if (port > 0 && !portFree(spec.host, port)) {
        spdlog::error("launch: port {} of node {} on {} is in use (another run still going?)", port,
                      p.id, spec.host);
        return kExitBadInput;
      }
    }
  }
  if (auto ready = prepareRunFolder(o.out, o.force); !ready) {
    spdlog::error("launch: {}", ready.error());
    return kExitBadInput;
  }
  std::ofstream(fs::path(o.out) / "command.txt") << plan.command_line << '\n';
  std::ofstream(fs::path(o.out) / "config.yaml") << readTextFile(o.config);  // for monitor --from
  if (certs) {
    std::vector<std::uint32_t> ids;
    for (const auto& p : plan.peers) ids.push_back(p.id);
    if (auto written = net::writeClusterCerts(*certs, ids); !written) {
      spdlog::error("launch: the run's certificates: {}", written.error());
      return kExitFailure;
    }
    spdlog::info("launch: mutual TLS with this run's certificates ({})", certs->string());
  }
  const fs::path token_file = fs::path(o.out) / "control.token";
  if (fresh_token) {
    if (auto written = base::writeFileWithMode(token_file, token + "\n", 0600); !written) {
      spdlog::error("launch: {}", written.error());
      return kExitFailure;
    }
  }
  if (!o.remote_out.empty() &&
      !copyRunFiles(plan, o.topology, o.config, certs,
                    fresh_token ? std::optional(token_file) : std::nullopt))
    return kExitFailure;

  catchInterrupts();
  Supervisor peers;
  std::map<std::uint32_t, int> status;  // by peer: the wait status
  for (const auto& p : plan.peers) {
    peers.spawn(p.id, p.argv, fs::path(o.out) / fmt::format("stdout-{}.log", p.id));
  }
  writeLaunchPids(o.out, plan, peers);
  spdlog::info("launch: {} peers started ({} Byzantine: {}); logs and results under {}",
               peers.size(), byzantine.size(), fmt::join(byzantine, ","), o.out);

  Monitor monitor(topology, byzantine, token);
  std::ofstream samples_file(fs::path(o.out) / "monitor.jsonl");
  std::vector<MonitorSample> samples;
  const bool tty = isatty(o.json ? STDERR_FILENO : STDOUT_FILENO);
  const auto started = Clock::now();
  auto next_scrape = started;
  // SIGTERM, then SIGKILL for a peer still running this much later.
  constexpr std::chrono::seconds kGoodbyeGrace(10);
  bool stopping = false;
  // Byzantine peers told to stop because no honest peer is left to attack: without this they
  // would sit out a deadline per remaining round. (A remote one ends with its ssh session.)
  std::set<std::uint32_t> dismissed;
  std::optional<Churn> churn;
  std::map<std::uint32_t, std::uintmax_t> rejoining;  // restarted peers not yet killable again
  if (o.churn > 0) {
    churn.emplace(o.churn, std::chrono::milliseconds(std::int64_t(o.churn_down * 1000)),
                  o.churn_seed, Clock::now());
  }
  while (!peers.empty() || (churn && churn->anyDown())) {
    for (const Supervisor::Exit& e : peers.reap()) status[std::uint32_t(e.key)] = e.status;
    if (churn && !stopping && !interrupted()) {
      churnStep(*churn, plan, byzantine, peers, status, o.out, rejoining);
    }
    const auto left = peers.pids();
    const bool honest_running = std::any_of(left.begin(), left.end(), [&](const auto& r) {
      return !byzantine.contains(std::uint32_t(r.first));
    });
    // A peer down for churn counts as running: it is coming back.
    const bool honest_returning = churn && churn->anyDown();
    if (!honest_running && !honest_returning && !left.empty() && !stopping && !interrupted()) {
      spdlog::info(
          "launch: every honest peer has stopped: SIGTERM to the {} Byzantine peer(s) left",
          left.size());
      for (const auto& [id, pid] : left) dismissed.insert(std::uint32_t(id));
      stopPeers(plan, peers, kGoodbyeGrace);
      stopping = true;
    }
    if (interrupted() && !stopping) {
      spdlog::warn("launch: interrupted: SIGTERM to {} peers (they say Goodbye and exit)",
                   peers.size());
      stopPeers(plan, peers, kGoodbyeGrace);
      stopping = true;
    }
    if (stopping && churn) {
      if (churn->anyDown()) spdlog::warn("launch: churn: peers still down stay down");
      churn.reset();
    }
    if (Clock::now() >= next_scrape && !peers.empty()) {
      monitor.scrape();
      const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
      samples.push_back(monitor.sample(elapsed));
      samples_file << monitorSampleJson(samples.back()) << '\n' << std::flush;
      const std::string table = monitor.table(elapsed);
      // Under --json stdout carries the one result object: the table is for people, on stderr.
      std::FILE* screen = o.json ? stderr : stdout;
      if (tty) {
        fmt::print(screen, "\x1b[H\x1b[J{}", table);
      } else if (int(elapsed) % 10 == 0) {
        fmt::print(screen, "{}", table);
      }
      std::fflush(screen);
      next_scrape = Clock::now() + std::chrono::milliseconds(std::int64_t(o.monitor_every * 1000));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  // Results: the peers' logs, the monitor's samples, the final models' consensus distance.
  if (!o.remote_out.empty()) copyResultsBack(plan, o.out);
  std::vector<PeerHistory> histories;
  std::vector<std::uint32_t> crashed, diverged;
  bool honest_ok = true;
  std::vector<std::vector<float>> finals;
  for (const auto& p : plan.peers) {
    const bool byz = byzantine.contains(p.id);
    histories.push_back(
        readPeerHistory(fs::path(o.out) / fmt::format("node-{}.jsonl", p.id), p.id, byz));
    const auto it = status.find(p.id);  // none: it never started
    const std::optional<Ending> ending =
        it != status.end() ? std::optional(endingOf(it->second)) : std::nullopt;
    const bool clean = ending == Ending::kCompleted;
    // A diverged peer stopped on purpose after a last evaluation: not a crash, not a success.
    const bool went_nonfinite = ending == Ending::kDiverged;
    if (went_nonfinite) diverged.push_back(p.id);
    // A remote peer's ending is its ssh client's: the node's exit code, 255 when it was killed.
    if (!clean && !went_nonfinite && !dismissed.contains(p.id)) {
      crashed.push_back(p.id);
      tellWhyItDied(p.id, it != status.end() ? std::optional(it->second) : std::nullopt, o.out,
                    crashed.size());
    }
    if (!byz && !clean) honest_ok = false;
    if (!byz && clean) {
      const auto model = finalModel(fs::path(o.out), p.id);
      if (model) finals.push_back(*model);
    }
  }
  if (finals.size() >= 2 && !interrupted()) {
    std::uint64_t last_round = 0;
    for (const auto& h : histories) {
      if (!h.rounds.empty()) last_round = std::max(last_round, h.rounds.back().round + 1);
    }
    samples.push_back({.seconds = std::chrono::duration<double>(Clock::now() - started).count(),
                       .round = last_round,
                       .consensus_distance = consensusDistance(finals)});
    samples_file << monitorSampleJson(samples.back()) << '\n' << std::flush;
  }
  RunSummary summary = summarize(histories, samples, crashed);
  summary.diverged = diverged;
  const std::string json = writeRunResults(
      o.out, summary, samples,
      {.title = fmt::format("phalanx run: {}", fs::path(o.config).filename().string()),
       .config_text = readTextFile(o.config),
       .command = plan.command_line});
  const std::string summary_file = (fs::path(o.out) / "summary.json").string(),
                    report_file = (fs::path(o.out) / "report.html").string();
  if (o.json) {
    nlohmann::ordered_json j;
    j["summary"] = nlohmann::json::parse(json);
    j["files"] = {{"summary", summary_file}, {"report", report_file}};
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("\n{}\nsummary: {}\nreport:  {}\n", json, summary_file, report_file);
  }
  if (interrupted()) return kExitFailure;
  return honest_ok ? kExitOk : kExitFailure;
}

}  // namespace phalanx::tools
