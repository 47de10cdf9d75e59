#include "tools/launch.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "node/npy.h"

namespace phalanx::tools {

std::string shellQuote(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./=:,+-") == std::string::npos;
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

LaunchPlan planLaunch(const LaunchRequest& r, const topologies::Topology& topology,
                      const std::set<std::string>& local_hosts) {
  LaunchPlan plan;
  plan.sets = r.sets;
  // Every peer learns who the attackers are from the config (the attackers' side knowledge:
  // they wait only for honest peers); the honest peers' rules never read it.
  for (const std::uint32_t id : r.byzantine) plan.sets.push_back(fmt::format("byzantine.{}.attack={}", id, r.attack));
  plan.command_line = fmt::format("phalanx launch --topology {} --config {}", r.topology_file, r.config_file);
  if (!r.byzantine.empty()) {
    plan.command_line += fmt::format(" --byzantine {} --attack {}", fmt::join(r.byzantine, ","), r.attack);
  }
  if (r.rounds > 0) plan.command_line += fmt::format(" --rounds {}", r.rounds);
  if (!r.wrap.empty()) plan.command_line += " --wrap " + shellQuote(r.wrap);
  for (const auto& s : r.sets) plan.command_line += " --set " + s;
  for (const auto& spec : topology.nodes()) {
    LaunchPeer p{.id = spec.id, .local = !r.wrap.empty() || local_hosts.contains(spec.host)};
    std::vector<std::string> node{p.local ? r.binary : (r.remote_binary.empty() ? r.binary : r.remote_binary),
                                  "node", "--topology", r.topology_file, "--config", r.config_file,
                                  "--id", std::to_string(spec.id), "--out", r.out};
    if (r.rounds > 0) {
      node.push_back("--rounds");
      node.push_back(std::to_string(r.rounds));
    }
    for (const auto& s : plan.sets) {
      node.push_back("--set");
      node.push_back(s);
    }
    if (!r.wrap.empty()) {
      std::string wrap = r.wrap;
      for (std::size_t at; (at = wrap.find("{id}")) != std::string::npos;) wrap.replace(at, 4, std::to_string(spec.id));
      std::istringstream words(wrap);
      for (std::string w; words >> w;) p.argv.push_back(w);
      p.argv.insert(p.argv.end(), node.begin(), node.end());
    } else if (p.local) {
      p.argv = std::move(node);
    } else {
      // One remote shell line: the folder first (the node writes its logs there), then exec so
      // a SIGTERM to ssh's session reaches the node.
      LaunchPeer inner{.argv = node};
      p.argv = {r.ssh, spec.host, fmt::format("mkdir -p {} && exec {}", shellQuote(r.out), inner.shellCommand())};
    }
    plan.peers.push_back(std::move(p));
  }
  return plan;
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
