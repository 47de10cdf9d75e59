// `phalanx topology gen|check|convert|place`: the command line of tools/topology_run.h.
#include <memory>
#include <string>
#include <vector>

#include "tools/command.h"
#include "tools/topology_run.h"
#include "topologies/convert.h"

namespace phalanx::tools {

using namespace topologies;
namespace {

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

  CLI::App* place = cmd->add_subcommand(
      "place",
      "print the ids where an attacker would put F Byzantine peers (comma-separated, for "
      "--byzantine), keeping every honest node within its byzantine_budget; exit 1 when the "
      "budgets let fewer in");
  place->add_option("file", o->file, "topology YAML")->required();
  place->add_option("--byzantine-count", o->byzantine_count, "F: how many to place")->required();
  addChoiceOption(place, "--strategy", o->strategy, kPlacementStrategies,
                  "random (seeded), centrality (highest betweenness first), cut (greedy: each "
                  "the node that most lowers the honest graph's algebraic connectivity)")
      ->capture_default_str();
  place->add_option("--seed", o->params.seed, "random: seed")->capture_default_str();
  place->add_flag("--json", o->json,
                  "one JSON object: the ids and the placement's breakdown check");

  return {cmd, [o, gen, check, convert, place] {
            if (gen->parsed()) return runTopologyGen(*o);
            if (check->parsed()) return runTopologyCheck(*o);
            if (convert->parsed()) return runTopologyConvert(*o);
            if (place->parsed()) return runTopologyPlace(*o);
            return kExitBadInput;
          }};
}

}  // namespace phalanx::tools
