#include "tools/launch.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base/text.h"
#include "node/npy.h"
#include "tools/supervisor.h"

extern char** environ;

namespace phalanx::tools {

std::string shellQuote(const std::string& word) {
  const bool plain =
      !word.empty() &&
      word.find_first_not_of(
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./=:,+-") ==
          std::string::npos;
  if (plain) return word;
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string LaunchPeer::shellCommand() const {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + shellQuote(a);
  return out;
}

std::vector<std::string> byzantineSets(const std::set<std::uint32_t>& ids,
                                       const std::string& attack,
                                       const topologies::Topology& topology) {
  std::vector<std::string> sets;
  for (const std::uint32_t id : ids) {
    if (!topology.contains(id)) {
      throw std::invalid_argument(fmt::format("--byzantine: no node {} in the topology", id));
    }
    sets.push_back(fmt::format("byzantine.{}.attack={}", id, attack));
  }
  return sets;
}

LaunchPlan planLaunch(const LaunchRequest& r, const topologies::Topology& topology,
                      const std::set<std::string>& local_hosts) {
  LaunchPlan plan;
  plan.sets = r.sets;
  for (std::string& set : byzantineSets(r.byzantine, r.attack, topology)) {
    plan.sets.push_back(std::move(set));
  }
  plan.command_line =
      fmt::format("phalanx launch --topology {} --config {}", r.topology_file, r.config_file);
  if (!r.byzantine.empty()) {
    plan.command_line +=
        fmt::format(" --byzantine {} --attack {}", fmt::join(r.byzantine, ","), r.attack);
  }
  if (r.rounds > 0) plan.command_line += fmt::format(" --rounds {}", r.rounds);
  if (!r.wrap.empty()) plan.command_line += " --wrap " + shellQuote(r.wrap);
  for (const auto& s : r.sets) plan.command_line += " --set " + s;
  if (!r.script.empty()) {
    plan.command_line +=
        " --python " + shellQuote(r.python) + " --script " + shellQuote(r.script[0]);
    if (r.script.size() > 1) plan.command_line += " --";
    for (std::size_t i = 1; i < r.script.size(); ++i)
      plan.command_line += " " + shellQuote(r.script[i]);
  }
  const std::string remote_out = r.remote_out.empty() ? r.out : r.remote_out;
  // A script's place as torch's launchers give it: RANK (its position in the topology),
  // WORLD_SIZE, and LOCAL_RANK / LOCAL_WORLD_SIZE among the peers of its host.
  std::map<std::string, std::uint32_t> per_host;
  for (const auto& spec : topology.nodes()) ++per_host[spec.host];
  std::map<std::string, std::uint32_t> placed;
  std::uint32_t rank = 0;
  for (const auto& spec : topology.nodes()) {
    const std::uint32_t local_rank = placed[spec.host]++;
    LaunchPeer p{.id = spec.id, .local = !r.wrap.empty() || local_hosts.contains(spec.host)};
    // Without a shared folder the remote peers read the copies launch put in theirs.
    const bool copied = !p.local && !r.remote_out.empty();
    std::vector<std::string> node{
        p.local ? r.binary : (r.remote_binary.empty() ? r.binary : r.remote_binary),
        "node",
        "--topology",
        copied ? remote_out + "/topology.yaml" : r.topology_file,
        "--config",
        copied ? remote_out + "/config.yaml" : r.config_file,
        "--id",
        std::to_string(spec.id),
        "--out",
        p.local ? r.out : remote_out};
    if (r.rounds > 0) {
      node.push_back("--rounds");
      node.push_back(std::to_string(r.rounds));
    }
    for (const auto& s : plan.sets) {
      node.push_back("--set");
      node.push_back(s);
    }
    if (!r.script.empty()) {
      // The same place in the run, handed to the script through its environment (its own
      // command line stays its own).
      node = {"env"};
      if (!r.python_path.empty()) node.push_back("PYTHONPATH=" + r.python_path);
      node.push_back("PHALANX_TOPOLOGY=" + r.topology_file);
      node.push_back("PHALANX_CONFIG=" + r.config_file);
      node.push_back(fmt::format("PHALANX_ID={}", spec.id));
      node.push_back("PHALANX_OUT=" + r.out);
      if (r.rounds > 0) node.push_back(fmt::format("PHALANX_ROUNDS={}", r.rounds));
      node.push_back("PHALANX_SETS=" + nlohmann::json(plan.sets).dump());
      node.push_back(fmt::format("RANK={}", rank));
      node.push_back(fmt::format("WORLD_SIZE={}", topology.nodes().size()));
      node.push_back(fmt::format("LOCAL_RANK={}", local_rank));
      node.push_back(fmt::format("LOCAL_WORLD_SIZE={}", per_host[spec.host]));
      if (!r.gpus.empty()) {
        node.push_back("CUDA_VISIBLE_DEVICES=" + r.gpus[local_rank % r.gpus.size()]);
      }
      node.push_back(r.python);
      node.insert(node.end(), r.script.begin(), r.script.end());
    }
    if (!r.wrap.empty()) {
      p.argv = base::splitWords(base::withId(r.wrap, spec.id));
      p.argv.insert(p.argv.end(), node.begin(), node.end());
    } else if (p.local) {
      p.argv = std::move(node);
    } else {
      // One remote shell line: the folder first (the node writes its logs there), the pid for
      // `phalanx inject --run`, output without the tty's carriage returns, then exec. The
      // session has a tty (-tt) so that its end — the launcher stopping the ssh client, or
      // dying — hangs the node up (SIGHUP: it leaves as on SIGTERM) instead of orphaning it.
      LaunchPeer inner{.argv = node};
      p.remote.ssh = base::splitWords(r.ssh);
      p.remote.ssh.push_back(spec.host);
      p.remote.pid_file = fmt::format("{}/node-{}.pid", remote_out, spec.id);
      p.out = remote_out;
      p.argv = {p.remote.ssh.begin(), p.remote.ssh.end() - 1};
      p.argv.push_back("-tt");
      p.argv.push_back(spec.host);
      p.argv.push_back(
          fmt::format("mkdir -p {} && echo $$ > {} && {{ stty -onlcr 2>/dev/null; exec {}; }}",
                      shellQuote(remote_out), shellQuote(p.remote.pid_file), inner.shellCommand()));
    }
    plan.peers.push_back(std::move(p));
    ++rank;
  }
  return plan;
}

std::vector<std::string> gpuList(const std::string& spec, const char* visible,
                                 std::size_t detected) {
  if (spec == "none") return {};
  std::vector<std::string> out;
  if (spec == "auto") {
    if (visible != nullptr && *visible != '\0') return base::split(visible, ',');
    for (std::size_t i = 0; i < detected; ++i) out.push_back(std::to_string(i));
    return out;
  }
  out = base::split(spec, ',');
  for (const std::string& device : out) {
    if (device.empty() || device.find_first_of(" \t") != std::string::npos) {
      throw std::invalid_argument(
          "--gpus: expected auto, none or a comma-separated list of "
          "devices (0,1,2 or GPU UUIDs), got '" +
          spec + "'");
    }
  }
  return out;
}

std::size_t detectedGpus() {
  std::FILE* listing = ::popen("nvidia-smi -L 2>/dev/null", "r");
  if (listing == nullptr) return 0;
  std::size_t count = 0;
  char line[512];
  while (std::fgets(line, sizeof line, listing) != nullptr) {
    if (std::strncmp(line, "GPU ", 4) == 0) ++count;
  }
  ::pclose(listing);
  return count;
}

std::string selfExecutable() {
  std::error_code ec;
  std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) return "phalanx";
  // Rebuilt while running (a long experiment): the kernel marks the old file deleted; the
  // path now holds the new build, which is what later cells should run.
  constexpr std::string_view kDeleted = " (deleted)";
  if (self.ends_with(kDeleted)) self.resize(self.size() - kDeleted.size());
  return self;
}

void writePids(const std::filesystem::path& out, const std::map<std::uint32_t, pid_t>& pids,
               const std::map<std::uint32_t, RemoteProcess>& remote) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [id, pid] : pids) j[std::to_string(id)] = pid;
  for (const auto& [id, peer] : remote) {
    j[std::to_string(id)] = {{"ssh", peer.ssh}, {"pid_file", peer.pid_file}};
  }
  std::ofstream(out / "pids.json") << j.dump() << '\n';
}

namespace {

// Each entry of OUT/pids.json whose key is one node id, with its value; nothing when the file is
// missing or not an object. The one reading of the file's shape, for both of its readers.
template <class Each>
void forEachPidsEntry(const std::filesystem::path& out, Each each) {
  std::ifstream in(out / "pids.json");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return;
  for (const auto& [key, value] : j.items()) {
    if (const auto id = base::parseIds(key); id && id->size() == 1) each(id->front(), value);
  }
}

}  // namespace

std::map<std::uint32_t, RemoteProcess> readRemotePids(const std::filesystem::path& out) {
  std::map<std::uint32_t, RemoteProcess> peers;
  forEachPidsEntry(out, [&](std::uint32_t id, const nlohmann::json& value) {
    if (!value.is_object()) return;
    const auto ssh = value.find("ssh");
    const auto pid_file = value.find("pid_file");
    if (ssh == value.end() || !ssh->is_array() || ssh->empty() || pid_file == value.end() ||
        !pid_file->is_string() ||
        !std::all_of(ssh->begin(), ssh->end(), [](const auto& w) { return w.is_string(); }))
      return;
    peers[id] = {.ssh = ssh->get<std::vector<std::string>>(),
                 .pid_file = pid_file->get<std::string>()};
  });
  return peers;
}

std::vector<std::string> remoteCommand(const std::vector<std::string>& ssh,
                                       const std::string& line) {
  std::vector<std::string> argv = ssh;
  argv.push_back(line);
  return argv;
}

int signalRemote(const RemoteProcess& peer, const std::string& signal) {
  const std::string file = shellQuote(peer.pid_file);
  return runCommand(remoteCommand(
      peer.ssh, fmt::format("test -s {0} && kill -{1} \"$(cat {0})\"", file, signal)));
}

std::map<std::uint32_t, pid_t> readPids(const std::filesystem::path& out) {
  std::map<std::uint32_t, pid_t> pids;
  forEachPidsEntry(out, [&](std::uint32_t id, const nlohmann::json& value) {
    if (value.is_number_integer() && value.get<long long>() > 0 &&
        value.get<long long>() <= std::numeric_limits<pid_t>::max()) {
      pids[id] = pid_t(value.get<long long>());
    }
  });
  return pids;
}

std::string readTextFile(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::optional<std::vector<float>> finalModel(const std::filesystem::path& out, std::uint32_t id) {
  const auto file = out / fmt::format("node-{}.npy", id);
  if (!std::filesystem::exists(file)) return std::nullopt;
  try {
    return node::readNpy(file).data;
  } catch (const node::NpyError&) {
    return std::nullopt;
  }
}

}  // namespace phalanx::tools
