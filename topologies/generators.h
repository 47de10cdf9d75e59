// Graph generators for the common decentralized-learning topologies, on nodes 0..n-1.
// Deterministic given the seed (own bounded draws over std::mt19937_64, whose output the
// standard fixes), so a seed names the same graph on every machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "base/names.h"
#include "topologies/topology.h"

namespace phalanx::topologies {

// The graph kinds a generator draws (the names topology files and `phalanx topology gen` use).
enum class GraphKind : std::uint8_t {
  kRing,
  kTorus,
  kComplete,
  kErdosRenyi,
  kRegular,
  kExponential,
  kTwoCliques,
  kDumbbell,
  kTwoWorlds,
  kStar
};
inline constexpr auto kGraphKinds =
    base::nameTable<GraphKind>({{GraphKind::kRing, "ring"},
                                {GraphKind::kTorus, "torus"},
                                {GraphKind::kComplete, "complete"},
                                {GraphKind::kErdosRenyi, "erdos_renyi"},
                                {GraphKind::kRegular, "regular"},
                                {GraphKind::kExponential, "exponential"},
                                {GraphKind::kTwoCliques, "two_cliques"},
                                {GraphKind::kDumbbell, "dumbbell"},
                                {GraphKind::kTwoWorlds, "two_worlds"},
                                {GraphKind::kStar, "star"}});

struct GeneratorParams {
  double p = 0.5;             // erdos_renyi: edge probability
  std::size_t degree = 4;     // regular: every node's degree (n * degree even, degree < n)
  std::size_t rows = 0;       // torus: grid rows (0: the most square factorization of n)
  std::size_t bridges = 1;    // two_cliques: edges i <-> i + n/2 joining the halves
  std::size_t path = 0;       // dumbbell: nodes on the path between the two cliques
  std::size_t links = 1;      // two_worlds: edges from each node of the first world to the second
  std::size_t byzantine = 0;  // two_worlds: the last nodes, each joined to every honest one
  std::uint64_t seed = 1;     // erdos_renyi, regular
};

// The parameters each kind takes, under the names topology files and `phalanx topology gen`
// use (p, degree, rows, bridges, path, seed); empty for a kind without any (or unknown).
const std::vector<std::string>& generatorParamNames(GraphKind kind);
// One parameter's value as written in a file or on the command line.
std::string formatGeneratorParam(const GeneratorParams& params, const std::string& name);

// The edges (a < b, sorted, unique) of graph `kind` on n nodes. Random kinds redraw until the
// graph is connected (an error after 1000 draws). Errors name the parameter at fault.
//   ring: i ~ i+1 mod n.  torus: rows x cols grid with wrap-around.  complete: all pairs.
//   erdos_renyi: each pair with probability p.  regular: uniform random degree-regular graph
//   (pairing model with rejection).  exponential: i ~ i + 2^j mod n for 2^j < n.
//   two_cliques: cliques on the two halves joined by `bridges` edges.
//   dumbbell: cliques of (n - path)/2 nodes joined by a path through `path` further nodes.
//   two_worlds (Gaucher et al. 2025): h = n - byzantine honest nodes in two cliques of h/2 and
//   h - h/2; node i < h/2 also joins h/2 + (i + k) mod (h - h/2) for k < links; the last
//   `byzantine` nodes are joined to every honest node (and not to each other).
//   star: node 0 (the hub of `exchange: hub`) joined to every other node, the leaves.
std::expected<std::vector<Edge>, std::string> generateEdges(GraphKind kind, std::size_t n,
                                                            const GeneratorParams& params);

// The per-node budgets a generated graph implies beyond the topology's default (unset: the
// default), by generated index. two_worlds: its attackers' own budget is 0 (it matters to
// nobody and must not raise warnings); star: a leaf's only neighbour is the hub, which it must
// trust (budget 0), while the hub's budget is the topology's.
std::vector<std::optional<std::size_t>> generatedBudgets(GraphKind kind, std::size_t n,
                                                         const GeneratorParams& params);

}  // namespace phalanx::topologies
