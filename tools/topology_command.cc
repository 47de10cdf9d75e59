// `phalanx topology gen|check|convert`: make topology files, judge them (connectivity,
// spectral gap, the Byzantine budget each neighbourhood can bear), and move graphs between
// phalanx and DecentralizePy or plain edge lists.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "node/json.h"
#include "tools/command.h"
#include "tools/run_analysis.h"
#include "topologies/analysis.h"
#include "topologies/convert.h"
#include "topologies/generators.h"
#include "topologies/topology.h"

namespace phalanx::tools {
namespace {

using node::jsonNumber;
using node::jsonString;

using namespace topologies;

struct TopologyOptions {
  // gen
  GraphKind kind = GraphKind::kRing;
  std::size_t n = 0;
  Addressing addressing;
  std::size_t budget = 0;
  std::size_t regions = 0;
  GeneratorParams params;
  // check
  std::string file;
  bool json = false;
  std::string byzantine;  // check --byzantine: the placement whose breakdown bound to report
  // convert
  std::string from = "yaml", to = "yaml";
};

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
  return out;
}

// The same as one JSON object.
std::string checkToJson(const TopologyCheck& c, const std::optional<BreakdownCheck>& breakdown) {
  std::string nodes;
  for (const auto& n : c.per_node) {
    if (!nodes.empty()) nodes += ",";
    nodes += fmt::format(R"({{"id":{},"degree":{},"budget":{},"tolerable":{}}})", n.id, n.degree,
                         n.budget, n.tolerable);
  }
  std::string warnings;
  for (const auto& w : c.warnings) warnings += (warnings.empty() ? "" : ",") + jsonString(w);
  return fmt::format(
      R"({{"nodes":{},"edges":{},"min_degree":{},"mean_degree":{},"max_degree":{},)"
      R"("connected":{},"components":{},"spectral_gap":{},"per_node":[{}],"breakdown":{},)"
      R"("warnings":[{}]}})",
      c.nodes, c.edges, c.min_degree, c.mean_degree, c.max_degree,
      c.components == 1 ? "true" : "false", c.components, jsonNumber(c.spectral_gap), nodes,
      breakdown
          ? fmt::format(R"({{"honest_connectivity":{},"byzantine_per_node":{},)"
                        R"("worst_node":{},"ratio":{},"beyond":{}}})",
                        jsonNumber(breakdown->honest_connectivity), breakdown->byzantine_per_node,
                        breakdown->worst_node, jsonNumber(breakdown->ratio), breakdown->beyond())
          : "null",
      warnings);
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

int runGen(const TopologyOptions& o) {
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
    for (const auto& w : checkTopology(t).warnings) spdlog::warn("{}", w);
    return kExitOk;
  } catch (const TopologyError& e) {
    spdlog::error("{}", e.what());
    return kExitBadInput;
  }
}

int runCheck(const TopologyOptions& o) {
  try {
    const Topology t = loadTopology(o.file);
    TopologyCheck c = checkTopology(t);
    std::optional<BreakdownCheck> breakdown;
    if (!o.byzantine.empty()) {
      const std::set<std::uint32_t> ids = parseIdList(o.byzantine);
      breakdown = breakdownCheck(t, std::set<NodeId>(ids.begin(), ids.end()));
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
    // A topology that cannot keep its promises is bad input for the launcher.
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

int runConvert(const TopologyOptions& o) {
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

void addAddressing(CLI::App* cmd, TopologyOptions& o) {
  cmd->add_option("--base-port", o.addressing.base_port, "node k listens on base-port + k")
      ->capture_default_str();
  cmd->add_option("--metrics-base-port", o.addressing.metrics_base_port,
                  "node k serves /metrics on metrics-base-port + k")
      ->capture_default_str();
  cmd->add_option("--host", o.addressing.host, "the host every node lives on")
      ->capture_default_str();
  cmd->add_option("--byzantine-budget", o.budget, "b: Byzantine neighbours each node tolerates")
      ->capture_default_str();
}

}  // namespace

Command addTopologyCommand(CLI::App& root) {
  auto o = std::make_shared<TopologyOptions>();
  CLI::App* cmd = root.add_subcommand(
      "topology", "generate, check and convert topology files (YAML, DecentralizePy, edge lists)");
  cmd->require_subcommand(1);

  CLI::App* gen = cmd->add_subcommand("gen", "print a generated topology as YAML");
  addChoiceOption(gen, "--kind", o->kind, kGraphKinds, "graph kind")->required();
  gen->add_option("--n", o->n, "number of nodes")->required()->check(CLI::Range(1, 65535));
  addAddressing(gen, *o);
  gen->add_option("--p", o->params.p, "erdos_renyi: edge probability")->capture_default_str();
  gen->add_option("--degree", o->params.degree, "regular: degree")->capture_default_str();
  gen->add_option("--rows", o->params.rows, "torus: rows (0: most square)")->capture_default_str();
  gen->add_option("--bridges", o->params.bridges, "two_cliques: edges between the halves")
      ->capture_default_str();
  gen->add_option("--path", o->params.path, "dumbbell: nodes on the path between the cliques")
      ->capture_default_str();
  gen->add_option("--links", o->params.links, "two_worlds: edges from each node to the other world")
      ->capture_default_str();
  gen->add_option("--byzantine", o->params.byzantine,
                  "two_worlds: the last nodes, joined to every honest node (budget 0; the "
                  "honest nodes' default budget becomes this count)")
      ->capture_default_str();
  gen->add_option("--seed", o->params.seed, "erdos_renyi, regular: seed")->capture_default_str();
  gen->add_option("--regions", o->regions,
                  "put the nodes in R regions r0..r{R-1}, contiguous blocks of ids (the link "
                  "classes 'within' and 'across' of `phalanx simulate --links` then apply)");

  CLI::App* check = cmd->add_subcommand(
      "check",
      "degrees, connectivity, spectral gap, tolerable Byzantine budget per node "
      "(exit 1 when a warning is printed)");
  check->add_option("file", o->file, "topology YAML")->required();
  check->add_flag("--json", o->json, "one JSON object instead of the table");
  check->add_option("--byzantine", o->byzantine,
                    "ids of the Byzantine peers, e.g. 8,9: also report the breakdown bound of "
                    "that placement (a warning when it is beyond)");

  CLI::App* convert = cmd->add_subcommand(
      "convert", "convert between phalanx YAML, DecentralizePy graph files and edge lists");
  convert->add_option("file", o->file, "input file")->required();
  std::vector<std::string> formats{"yaml"};
  formats.insert(formats.end(), kGraphFormats.begin(), kGraphFormats.end());
  convert->add_option("--from", o->from, "input format")
      ->check(CLI::IsMember(formats))
      ->capture_default_str();
  convert->add_option("--to", o->to, "output format")
      ->check(CLI::IsMember(formats))
      ->capture_default_str();
  addAddressing(convert, *o);

  return {cmd, [o, gen, check, convert] {
            if (gen->parsed()) return runGen(*o);
            if (check->parsed()) return runCheck(*o);
            if (convert->parsed()) return runConvert(*o);
            return kExitBadInput;
          }};
}

}  // namespace phalanx::tools
