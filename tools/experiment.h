// Experiment grids (`phalanx experiment`): a base config and topology, the axes to vary
// (attack, rule, f — the number of Byzantine peers —, n — a generated graph's size — and any
// config field), and their cells, each planned as one launch. Pure. A cell's results and record are
// tools/cell_record.h, the grid's tables and plots tools/grid_report.h; running the cells is
// tools/experiment_command.cc.
//
// Grid file (YAML; paths relative to it):
//   config: ../monna-fmnist.yaml
//   topology: {kind: complete, n: 26, byzantine_budget: 5}   # or a topology file
//   byzantine: [21, 22, 23, 24, 25]    # or f: 5 (the last f ids); the f axis overrides
//   honest: 16                         # optional: generated graphs get honest + f peers, and
//                                      #   topology.byzantine_budget may be the word f
//   collude: true                      # optional: the Byzantine peers collude
//   rounds: 600                        # optional
//   set: ["byzantine_field=value"]     # optional, every cell
//   grid:                              # the cells are the product of these lists
//     attack: [none, opt_alie, "alie:tau=10"]           # name[:key=value,...] per attacker
//     rule: [nna, "nnm+cwtm", "clipped_gossip:0.1"]   # pre+...+rule[:tau]
//     seed: [1, 2]
//     n: [9, 17, 33]                                    # a generated graph's size per cell
//     placement: [last, random, centrality, cut]        # where the f Byzantine peers sit
//                          # (topologies/placement.h; random's seed: "random:7", else the
//                          # cell's seed axis, else 1; last: the last f ids, the default)
//     compression.density: [0.01, 0.001]
//     compression: [{codec: topk, density: 0.01, gamma: 0.05}]   # a bundle set together
//     settings: [{exchange: gradient, compression.feedback: dgc}] # a bundle of top-level paths
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/names.h"
#include "topologies/generators.h"
#include "topologies/topology.h"

namespace phalanx::tools {

class GridError : public base::ErrorOf<base::ErrorKind::kGrid> {
 public:
  using ErrorOf::ErrorOf;
};

struct Axis {
  std::string name;
  std::vector<std::string> values;  // as written (YAML scalars)
};

// What runs a grid's cells: `phalanx launch` (real processes over TCP) or `phalanx simulate`
// (every peer in one process, virtual time). The name is also the subcommand's.
enum class Engine : std::uint8_t { kLaunch, kSimulate };
inline constexpr auto kEngines =
    base::nameTable<Engine>({{Engine::kLaunch, "launch"}, {Engine::kSimulate, "simulate"}});

struct TopologySpec {
  std::filesystem::path file;                 // either a file
  std::optional<topologies::GraphKind> kind;  // or a generator
  std::size_t n = 0;
  std::size_t byzantine_budget = 0;
  bool budget_is_f = false;                   // byzantine_budget: f (the cell's f)
  std::map<std::string, std::string> params;  // generator parameters (p, degree, rows, ...)
};

struct Grid {
  std::filesystem::path file;
  std::filesystem::path config;
  TopologySpec topology;
  std::vector<std::uint32_t> byzantine;  // explicit ids; empty: the last f
  std::size_t f = 0;
  std::size_t honest = 0;  // > 0: generated graphs have honest + f peers
  bool collude = false;    // every Byzantine peer's collude: true
  std::uint64_t rounds = 0;
  std::vector<std::string> sets;
  std::vector<Axis> axes;  // in file order
};

// One cell: a value per axis.
struct Cell {
  std::vector<std::pair<std::string, std::string>> values;  // axis order
  std::string value(const std::string& axis, const std::string& fallback = "") const;
  // A folder name: "attack-alie_rule-nnm+cwtm_seed-1".
  std::string name() const;
};

// Throws GridError naming the file and the field.
Grid loadGrid(const std::filesystem::path& file);

// Every cell, in axis order (the last axis varies fastest), keeping only cells whose axis
// `field` takes one of the listed values for every filter ("attack=none,opt_ipm").
// A filter on an axis the grid does not have is a GridError.
std::vector<Cell> expand(const Grid& grid, const std::vector<std::string>& filters);

// What launch needs for a cell.
struct CellPlan {
  topologies::Topology topology;  // ports from base_port (nodes) and base_port + 250 (metrics)
  std::vector<std::uint32_t> byzantine;
  std::string attack;             // "none": named Byzantine, behaving honestly
  std::vector<std::string> sets;  // grid sets + rule + config-field axes
};
CellPlan planCell(const Grid& grid, const Cell& cell, std::uint16_t base_port);

// For each plan (all planned from one base port), the index of the first plan that runs the
// same: the same peers and edges, Byzantine peers and attack, and sets. A cell without
// Byzantine peers runs the same whatever its attack axis says (a breakdown's f = 0 column), so
// `phalanx experiment` runs it once and gives the others its record.
std::vector<std::size_t> firstOfSameRun(const std::vector<CellPlan>& plans);

}  // namespace phalanx::tools
