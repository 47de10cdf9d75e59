#include "tools/topology_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "tools/command.h"
#include "tools/run_analysis.h"
#include "topologies/analysis.h"
#include "topologies/convert.h"
#include "topologies/generators.h"
#include "topologies/topology.h"

namespace phalanx::tools {
namespace {

using namespace topologies;

// The breakdown bound's line for people.
std::string formatBreakdown(const BreakdownCheck& b) {
  return fmt::format(
      "breakdown bound (2b < mu_2, unit weights): honest algebraic connectivity mu_2 = {:.4f}, "
      "b = {} Byzantine neighbours (node {}), 2b / mu_2 = {:.3f}: {}\n",
      b.honest_connectivity, b.byzantine_per_node, b.worst_node, b.ratio,
      b.beyond() ? "beyond the bound" : "within the bound");
}

// The check as a table for people.
std::string formatCheck(const TopologyCheck& c, const std::optional<BreakdownCheck>& breakdown) {
  std::string out = fmt::format(
      "nodes {}, edges {}, degree min {} / mean {:.2f} / max {}\n"
      "connected: {}{}\n",
      c.nodes, c.edges, c.min_degree, c.mean_degree, c.max_degree, c.components == 1 ? "yes" : "no",
      c.components == 1 ? "" : fmt::format(" ({} components)", c.components));
  out += std::isfinite(c.spectral_gap)
             ? fmt::format("spectral gap (Metropolis weights): {:.6f}\n", c.spectral_gap)
             : fmt::format("spectral gap: skipped (more than {} nodes)\n", kMaxSpectralNodes);
  out += "node  degree  budget  tolerable\n";
  for (const auto& n : c.per_node) {
    out += fmt::format("{:>4}  {:>6}  {:>6}  {:>9}{}\n", n.id, n.degree, n.budget, n.tolerable,
                       n.budget > n.tolerable ? "  <- too many" : "");
  }
  if (breakdown) out += formatBreakdown(*breakdown);
  for (const auto& w : c.warnings) out += "warning: " + w + "\n";
  for (const auto& w : c.cautions) out += "warning: " + w + "\n";
  return out;
}

// The breakdown check as JSON (check --json, place --json).
nlohmann::ordered_json breakdownJson(const BreakdownCheck& b) {
  return {{"honest_connectivity", b.honest_connectivity},
          {"byzantine_per_node", b.byzantine_per_node},
          {"worst_node", b.worst_node},
          {"ratio", b.ratio},
          {"beyond", b.beyond()}};
}

// The same as one JSON object.
std::string checkToJson(const TopologyCheck& c, const std::optional<BreakdownCheck>& breakdown) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const auto& n : c.per_node) {
    nodes.push_back(
        {{"id", n.id}, {"degree", n.degree}, {"budget", n.budget}, {"tolerable", n.tolerable}});
  }
  nlohmann::ordered_json j{{"nodes", c.nodes},
                           {"edges", c.edges},
                           {"min_degree", c.min_degree},
                           {"mean_degree", c.mean_degree},
                           {"max_degree", c.max_degree},
                           {"connected", c.components == 1},
                           {"components", c.components},
                           {"spectral_gap", c.spectral_gap},
                           {"per_node", std::move(nodes)},
                           {"breakdown", nullptr},
                           {"warnings", c.warnings},
                           {"cautions", c.cautions}};
  if (breakdown) j["breakdown"] = breakdownJson(*breakdown);
  return j.dump();
}

// The command line that regenerates a generated file, written as its first comment line.
std::string genCommandLine(const TopologyOptions& o) {
  std::string line = fmt::format(
      "phalanx topology gen --kind {} --n {} --base-port {} --metrics-base-port {} --host {}",
      kGraphKinds.name(o.kind), o.n, o.addressing.base_port, o.addressing.metrics_base_port,
      o.addressing.host);
  if (o.budget) line += fmt::format(" --byzantine-budget {}", o.budget);
  if (o.regions) line += fmt::format(" --regions {}", o.regions);
  for (const auto& name : generatorParamNames(o.kind)) {
    line += fmt::format(" --{} {}", name, formatGeneratorParam(o.params, name));
  }
  return line;
}

}  // namespace

int runTopologyGen(const TopologyOptions& o) {
  auto edges = generateEdges(o.kind, o.n, o.params);
  if (!edges) {
    spdlog::error("{}", edges.error());
    return kExitBadInput;
  }
  try {
    std::vector<NodeSpec> nodes = numberedNodes(o.n, o.addressing);
    std::size_t budget = o.budget;
    // Every honest node of two_worlds has all `byzantine` attackers as neighbours: that is
    // its budget.
    if (o.kind == GraphKind::kTwoWorlds && budget == 0) budget = o.params.byzantine;
    const auto budgets = generatedBudgets(o.kind, o.n, o.params);
    for (std::size_t k = 0; k < o.n; ++k) nodes[k].byzantine_budget = budgets[k];
    assignRegions(nodes, o.regions);
    const Topology t(std::move(nodes), std::move(*edges), budget, "generated");
    std::cout << toYaml(t, "generated by: " + genCommandLine(o));
    const TopologyCheck check = checkTopology(t);
    for (const auto& w : check.warnings) spdlog::warn("{}", w);
    for (const auto& w : check.cautions) spdlog::warn("{}", w);
    return kExitOk;
  } catch (const TopologyError& e) {
    spdlog::error("{}", e.what());
    return kExitBadInput;
  }
}

int runTopologyCheck(const TopologyOptions& o) {
  try {
    const Topology t = loadTopology(o.file);
    const std::set<std::uint32_t> listed =
        o.byzantine.empty() ? std::set<std::uint32_t>{} : parseIdList(o.byzantine);
    const std::set<NodeId> byzantine(listed.begin(), listed.end());
    TopologyCheck c = checkTopology(t, byzantine);
    std::optional<BreakdownCheck> breakdown;
    if (!o.byzantine.empty()) {
      breakdown = breakdownCheck(t, byzantine);
      if (breakdown->beyond()) {
        c.warnings.push_back(fmt::format(
            "this placement is beyond the breakdown bound (2b = {} >= mu_2 = {:.4f}): no gossip "
            "rule is robust on every graph with this connectivity and budget",
            2 * breakdown->byzantine_per_node, breakdown->honest_connectivity));
      }
    }
    if (o.json) {
      std::cout << checkToJson(c, breakdown) + "\n";
    } else {
      std::cout << formatCheck(c, breakdown);
    }
    // A topology that cannot keep its promises is bad input for the launcher; one whose
    // promises cost pace (the cautions) is not.
    return c.warnings.empty() ? kExitOk : kExitFailure;
  } catch (const TopologyError& e) {
    spdlog::error("{}", e.what());
    return kExitBadInput;
  } catch (const std::invalid_argument& e) {
    spdlog::error("--byzantine: {}", e.what());
    return kExitBadInput;
  }
}

// A DecentralizePy or edge-list graph as a topology: id k listens on base_port + k.
Topology fromGraphFile(const std::string& text, const TopologyOptions& o) {
  GraphFile g = readGraphFile(text, o.from, o.file);
  std::vector<NodeSpec> nodes;
  for (NodeId id : g.ids) nodes.push_back(numberedNode(id, o.addressing));
  return Topology(std::move(nodes), std::move(g.edges), o.budget, o.file);
}

int runTopologyConvert(const TopologyOptions& o) {
  try {
    std::ifstream in(o.file);
    if (!in) throw TopologyError(fmt::format("{}: cannot read the file", o.file));
    std::stringstream text;
    text << in.rdbuf();
    const Topology t =
        o.from == "yaml" ? parseTopology(text.str(), o.file) : fromGraphFile(text.str(), o);
    if (o.to == "yaml") {
      std::cout << toYaml(t, fmt::format("converted from {} ({})", o.file, o.from));
    } else {
      std::cout << writeGraphFile(t, o.to);
    }
    return kExitOk;
  } catch (const TopologyError& e) {
    spdlog::error("{}", e.what());
    return kExitBadInput;
  }
}

int runTopologyPlace(const TopologyOptions& o) {
  try {
    const Topology t = loadTopology(o.file);
    const Placement p = placeByzantine(t, o.byzantine_count, o.strategy, o.params.seed);
    if (o.json) {
      nlohmann::ordered_json j{{"strategy", std::string(kPlacementStrategies.name(o.strategy))},
                               {"requested", p.requested},
                               {"byzantine", p.byzantine},
                               {"complete", p.complete()},
                               {"breakdown", nullptr}};
      if (p.breakdown) j["breakdown"] = breakdownJson(*p.breakdown);
      std::cout << j.dump() << "\n";
    } else {
      std::cout << fmt::format("{}\n", fmt::join(p.byzantine, ","));
      if (p.breakdown) std::cerr << formatBreakdown(*p.breakdown);
    }
    if (!p.complete()) {
      spdlog::warn(
          "place: the budgets let {} of {} Byzantine peers in (each honest node takes at "
          "most its byzantine_budget of them)",
          p.byzantine.size(), p.requested);
      return kExitFailure;
    }
    return kExitOk;
  } catch (const TopologyError& e) {
    spdlog::error("{}", e.what());
    return kExitBadInput;
  }
}

}  // namespace phalanx::tools
