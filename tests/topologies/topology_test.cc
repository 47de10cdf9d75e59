// Topology files, generators, Metropolis weights, checks and conversions, on graphs small
// enough to verify by hand.
#include "topologies/topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numbers>
#include <set>
#include <string>
#include <thread>

#include "topologies/analysis.h"
#include "topologies/convert.h"
#include "topologies/generators.h"

namespace phalanx::topologies {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const char* kPath3 = R"(
byzantine_budget: 1
nodes:
  - {id: 10, host: 10.0.0.1, port: 7000, metrics_port: 9000}
  - {id: 11, host: 10.0.0.2, port: 7000, metrics_port: 9000, byzantine_budget: 0}
  - {id: 12, host: 10.0.0.2, port: 7001}
edges: [[10, 11], [12, 11], [11, 10]]
)";

std::string parseError(const std::string& yaml) {
  try {
    parseTopology(yaml, "t.yaml");
  } catch (const TopologyError& e) {
    return e.what();
  }
  return "";
}

std::vector<std::size_t> degrees(std::size_t n, const std::vector<Edge>& edges) {
  std::vector<std::size_t> d(n, 0);
  for (const auto& [a, b] : edges) {
    ++d[a];
    ++d[b];
  }
  return d;
}

TEST(TopologyFile, ParsesNodesEdgesAndBudgets) {
  const Topology t = parseTopology(kPath3, "t.yaml");
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.edges(), (std::vector<Edge>{{10, 11}, {11, 12}}));  // duplicates merged
  EXPECT_THAT(t.neighbours(11), ElementsAre(10, 12));
  EXPECT_EQ(t.node(10).host, "10.0.0.1");
  EXPECT_EQ(t.node(12).metrics_port, 0);
  EXPECT_EQ(t.budgetOf(10), 1u);
  EXPECT_EQ(t.budgetOf(11), 0u);  // per-node override
  EXPECT_THROW(t.node(13), TopologyError);
}

TEST(Analysis, HopsFromANodeAndAroundAnother) {
  const Topology t = parseTopology(kPath3, "t.yaml");  // 10 - 11 - 12
  const std::map<NodeId, std::size_t> all{{10, 0}, {11, 1}, {12, 2}};
  EXPECT_EQ(hopsFrom(t, 10), all);
  // Without 11, 10 reaches nobody: what 11's neighbours see of each other when it is removed.
  const std::map<NodeId, std::size_t> alone{{10, 0}};
  EXPECT_EQ(hopsFrom(t, 10, NodeId{11}), alone);
}

// Against the definition: a search from every neighbour over the whole graph around the node.
TEST(Analysis, DetourLengthIsTheLongestPathBetweenNeighboursAroundTheNode) {
  const std::pair<GraphKind, std::size_t> graphs[] = {{GraphKind::kTorus, 30},
                                                      {GraphKind::kRing, 7},
                                                      {GraphKind::kComplete, 5},
                                                      {GraphKind::kErdosRenyi, 40},
                                                      {GraphKind::kTwoCliques, 12}};
  for (const auto& [kind, n] : graphs) {
    SCOPED_TRACE(n);
    const Topology t(numberedNodes(n, {}), *generateEdges(kind, n, {.p = 0.1, .seed = 2}), 1);
    for (const auto& n : t.nodes()) {
      std::size_t want = 1;
      for (const NodeId a : t.neighbours(n.id)) {
        const auto hops = hopsFrom(t, a, n.id);
        for (const NodeId b : t.neighbours(n.id)) {
          want = std::max(want, hops.contains(b) ? hops.at(b) : t.size());
        }
      }
      EXPECT_EQ(detourLength(t, n.id), want) << "node " << n.id;
    }
  }
  const Topology path = parseTopology(kPath3, "t.yaml");  // 10 - 11 - 12: 11 cuts them apart
  EXPECT_EQ(detourLength(path, 11), 3u);
  EXPECT_EQ(detourLength(path, 10), 1u);
}

TEST(Analysis, SharedDetourLengthsAnswerAsDetourLengthFromEveryThread) {
  const Topology t(numberedNodes(36, {}), *generateEdges(GraphKind::kTorus, 36, {}), 1);
  const DetourLengths shared(t);
  std::vector<std::size_t> first(t.size()), second(t.size());
  // Two threads asking for every node, in opposite orders: both measure, both agree.
  std::thread a([&] {
    for (std::size_t i = 0; i < t.size(); ++i) first[i] = shared(t.nodes()[i].id);
  });
  std::thread b([&] {
    for (std::size_t i = t.size(); i-- > 0;) second[i] = shared(t.nodes()[i].id);
  });
  a.join();
  b.join();
  for (std::size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(first[i], detourLength(t, t.nodes()[i].id));
    EXPECT_EQ(second[i], first[i]);
  }
  EXPECT_THROW(shared(99), TopologyError);
}

TEST(TopologyFile, WritesYamlThatReadsBackTheSame) {
  const Topology t = parseTopology(kPath3, "t.yaml");
  const std::string yaml = toYaml(t, "first line\nsecond");
  EXPECT_THAT(yaml, HasSubstr("# first line\n# second\n"));
  const Topology back = parseTopology(yaml, "back.yaml");
  EXPECT_EQ(back.edges(), t.edges());
  for (const auto& n : t.nodes()) {
    EXPECT_EQ(back.node(n.id).host, n.host);
    EXPECT_EQ(back.node(n.id).port, n.port);
    EXPECT_EQ(back.node(n.id).metrics_port, n.metrics_port);
    EXPECT_EQ(back.budgetOf(n.id), t.budgetOf(n.id));
  }
}

TEST(TopologyFile, RegionsAreAssignedInBlocksAndReadBack) {
  auto nodes = numberedNodes(10, {});
  assignRegions(nodes, 4);  // node k in r(4k/10)
  std::vector<std::string> regions;
  for (const auto& n : nodes) regions.push_back(n.region);
  EXPECT_EQ(regions,
            (std::vector<std::string>{"r0", "r0", "r0", "r1", "r1", "r2", "r2", "r2", "r3", "r3"}));
  const Topology t(nodes, {{0, 9}}, 0, "t.yaml");
  const Topology back = parseTopology(toYaml(t, ""), "back.yaml");
  EXPECT_EQ(back.node(4).region, "r1");
  EXPECT_EQ(back.node(9).region, "r3");
  auto few = numberedNodes(3, {});
  EXPECT_THROW(assignRegions(few, 4), TopologyError);
  nodes[2].region = "eu west";  // links files name regions as one word
  EXPECT_THROW(Topology(nodes, {{0, 9}}, 0, "t.yaml"), TopologyError);
}

TEST(TopologyFile, GeneratorSectionMapsOntoNodesInIdOrder) {
  const Topology t = parseTopology(R"(
nodes: [{id: 5, port: 7005}, {id: 2, port: 7002}, {id: 9, port: 7009}, {id: 7, port: 7007}]
generator: {kind: ring}
)",
                                   "g.yaml");
  // Ring 0-1-2-3-0 over ids 2, 5, 7, 9.
  EXPECT_EQ(t.edges(), (std::vector<Edge>{{2, 5}, {2, 9}, {5, 7}, {7, 9}}));
}

TEST(Generators, StarHasItsHubAtZeroAndLeavesThatTrustIt) {
  auto edges = generateEdges(GraphKind::kStar, 4, {});
  ASSERT_TRUE(edges.has_value()) << edges.error();
  EXPECT_EQ(*edges, (std::vector<Edge>{{0, 1}, {0, 2}, {0, 3}}));
  EXPECT_THAT(generateEdges(GraphKind::kStar, 1, {}).error(), HasSubstr("star: n = 1"));
  const auto budgets = generatedBudgets(GraphKind::kStar, 4, {});
  EXPECT_EQ(budgets, (std::vector<std::optional<std::size_t>>{std::nullopt, 0, 0, 0}));
  // A file's generator section gets the same budgets, where the file gives none.
  const Topology t = parseTopology(R"(
byzantine_budget: 1
nodes: [{id: 3, port: 7003}, {id: 4, port: 7004, byzantine_budget: 0}, {id: 8, port: 7008}]
generator: {kind: star}
)",
                                   "s.yaml");
  EXPECT_EQ(t.neighbours(3), (std::vector<NodeId>{4, 8}));
  EXPECT_EQ(t.budgetOf(3), 1u);
  EXPECT_EQ(t.budgetOf(8), 0u);
  EXPECT_EQ(starCentre(t), std::optional<NodeId>(3));
  EXPECT_TRUE(checkTopology(t).warnings.empty());
  // Not stars: a ring, and a star with one extra edge between two leaves.
  const auto ring = Topology(
      {{.id = 0, .port = 1}, {.id = 1, .port = 2}, {.id = 2, .port = 3}, {.id = 3, .port = 4}},
      {{0, 1}, {1, 2}, {2, 3}, {0, 3}}, 0);
  EXPECT_EQ(starCentre(ring), std::nullopt);
  const auto extra = Topology(
      {{.id = 0, .port = 1}, {.id = 1, .port = 2}, {.id = 2, .port = 3}, {.id = 3, .port = 4}},
      {{0, 1}, {0, 2}, {0, 3}, {1, 2}}, 0);
  EXPECT_EQ(starCentre(extra), std::nullopt);
}

TEST(TopologyFile, ErrorsNameTheFileAndTheField) {
  EXPECT_THAT(parseError("nodes: [{id: 0, port: 1}, {id: 0, port: 2}]\nedges: []"),
              HasSubstr("t.yaml: nodes: id 0 appears twice"));
  EXPECT_THAT(parseError("nodes: [{id: 0, port: 1}]\nedges: [[0, 3]]"),
              HasSubstr("[0, 3] names a node that is not in nodes"));
  EXPECT_THAT(parseError("nodes: [{id: 0, port: 1}]\nedges: [[0, 0]]"),
              HasSubstr("joins a node to itself"));
  EXPECT_THAT(parseError("nodes: [{id: 0}]\nedges: []"),
              HasSubstr("t.yaml: nodes[0].port: missing"));
  EXPECT_THAT(parseError("nodes: [{id: 0, port: 1, colour: red}]\nedges: []"),
              HasSubstr("nodes[0].colour: unknown field"));
  EXPECT_THAT(parseError("nodes: [{id: 0, port: 70000}]\nedges: []"), HasSubstr("nodes[0].port"));
  EXPECT_THAT(parseError("nodes: [{id: 0, port: 1}, {id: 1, port: 1}]\nedges: []"),
              HasSubstr("reuses port 1"));
  EXPECT_THAT(parseError("nodes: [{id: 0, port: 1}]"), HasSubstr("give exactly one of"));
  EXPECT_THAT(parseError("nodes: [{id: 0, port: 1}]\nedges: []\ngenerator: {kind: ring}"),
              HasSubstr("give exactly one of"));
  EXPECT_THAT(parseError("nodes: [{id: 0, port: 1}]\ngenerator: {kind: ring, p: 0.5}"),
              HasSubstr("generator.p: unknown field"));
  EXPECT_THAT(parseError("nodes: [{id: 0, port: 1}]\ngenerator: {kind: wheel}"),
              HasSubstr("generator.kind: unknown value 'wheel'"));
  EXPECT_THAT(parseError("nodes: [{id: 0, port: 1}, {id: 1, port: 2}, {id: 2, port: 3}]\n"
                         "generator: {kind: regular, degree: 3}"),
              HasSubstr("regular: degree = 3"));
  EXPECT_THAT(parseError("edges: [[0, 1]]"), HasSubstr("nodes: missing or empty"));
  EXPECT_THAT(parseError("nodes: [{id: 0, port: 1}\nedges"), HasSubstr("not valid YAML"));
  EXPECT_THAT(parseError("nodes: [{id: 0, port: 1}]\nedges: [[0, 1, 2]]"),
              HasSubstr("item 0 should be a pair"));
  EXPECT_THROW(loadTopology("/nonexistent/t.yaml"), TopologyError);
}

TEST(Generators, DeterministicShapes) {
  auto ring = generateEdges(GraphKind::kRing, 5, {});
  ASSERT_TRUE(ring);
  EXPECT_EQ(*ring, (std::vector<Edge>{{0, 1}, {0, 4}, {1, 2}, {2, 3}, {3, 4}}));
  EXPECT_EQ(generateEdges(GraphKind::kRing, 2, {})->size(), 1u);
  EXPECT_TRUE(generateEdges(GraphKind::kRing, 1, {})->empty());

  EXPECT_EQ(generateEdges(GraphKind::kComplete, 6, {})->size(), 15u);

  auto torus = generateEdges(GraphKind::kTorus, 16, {});  // 4 x 4
  EXPECT_EQ(torus->size(), 32u);
  EXPECT_THAT(degrees(16, *torus), ::testing::Each(4u));
  EXPECT_EQ(generateEdges(GraphKind::kTorus, 6, {.rows = 2})->size(), 9u);  // 2 x 3: rows of a ring
  EXPECT_FALSE(generateEdges(GraphKind::kTorus, 6, {.rows = 4}));

  // Hops 1, 2, 4 on 8 nodes: 4 is its own inverse, so degree 2 + 2 + 1 = 5.
  auto expo = generateEdges(GraphKind::kExponential, 8, {});
  EXPECT_THAT(degrees(8, *expo), ::testing::Each(5u));

  auto cliques = generateEdges(GraphKind::kTwoCliques, 8, {.bridges = 2});
  EXPECT_EQ(cliques->size(), 6u + 6u + 2u);
  EXPECT_TRUE(std::binary_search(cliques->begin(), cliques->end(), Edge{1, 5}));
  EXPECT_FALSE(generateEdges(GraphKind::kTwoCliques, 7, {}));

  auto dumbbell = generateEdges(GraphKind::kDumbbell, 8, {.path = 2});  // K3 - 3 - 4 - K3
  EXPECT_EQ(dumbbell->size(), 3u + 3u + 3u);
  EXPECT_TRUE(std::binary_search(dumbbell->begin(), dumbbell->end(), Edge{2, 3}));
  EXPECT_TRUE(std::binary_search(dumbbell->begin(), dumbbell->end(), Edge{3, 4}));
  EXPECT_TRUE(std::binary_search(dumbbell->begin(), dumbbell->end(), Edge{4, 5}));
  EXPECT_FALSE(generateEdges(GraphKind::kDumbbell, 8, {.path = 1}));

  EXPECT_FALSE(kGraphKinds.parse("wheel").has_value());  // a file or --kind names the allowed ones
  EXPECT_THAT(generateEdges(GraphKind(99), 4, {}).error(), HasSubstr("allowed: ring, torus"));
  EXPECT_FALSE(generateEdges(GraphKind::kRing, 0, {}));
}

TEST(Generators, TwoWorldsWithByzantineNodesJoinedToEveryHonestOne) {
  // 6 honest (worlds {0,1,2} and {3,4,5}), links 2: 0~3,4  1~4,5  2~5,3; attackers 6, 7.
  auto edges = generateEdges(GraphKind::kTwoWorlds, 8, {.links = 2, .byzantine = 2});
  ASSERT_TRUE(edges.has_value()) << edges.error();
  std::set<Edge> want;
  for (NodeId a : {0u, 1u, 2u}) {
    for (NodeId b = a + 1; b < 3; ++b) want.insert({a, b});
  }
  for (NodeId a : {3u, 4u, 5u}) {
    for (NodeId b = a + 1; b < 6; ++b) want.insert({a, b});
  }
  for (const Edge& e : {Edge{0, 3}, Edge{0, 4}, Edge{1, 4}, Edge{1, 5}, Edge{2, 5}, Edge{2, 3}})
    want.insert(e);
  for (NodeId h = 0; h < 6; ++h) {
    want.insert({h, 6});
    want.insert({h, 7});
  }
  EXPECT_EQ(std::set<Edge>(edges->begin(), edges->end()), want);
  EXPECT_THAT(generateEdges(GraphKind::kTwoWorlds, 8, {.links = 4, .byzantine = 2}).error(),
              HasSubstr("links = 4 must be in [1, 3]"));
  EXPECT_THAT(generateEdges(GraphKind::kTwoWorlds, 3, {.byzantine = 2}).error(),
              HasSubstr("at least 2 honest"));
}

TEST(Generators, RandomKindsAreSeededAndConnected) {
  const auto a = generateEdges(GraphKind::kErdosRenyi, 30, {.p = 0.2, .seed = 7});
  const auto b = generateEdges(GraphKind::kErdosRenyi, 30, {.p = 0.2, .seed = 7});
  const auto c = generateEdges(GraphKind::kErdosRenyi, 30, {.p = 0.2, .seed = 8});
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
  EXPECT_EQ(componentCount(30, *a), 1u);
  EXPECT_THAT(generateEdges(GraphKind::kErdosRenyi, 40, {.p = 0.001}).error(),
              HasSubstr("no connected graph"));
  EXPECT_FALSE(generateEdges(GraphKind::kErdosRenyi, 4, {.p = 0.0}));

  const auto r = generateEdges(GraphKind::kRegular, 20, {.degree = 3, .seed = 3});
  ASSERT_TRUE(r) << r.error();
  EXPECT_THAT(degrees(20, *r), ::testing::Each(3u));
  EXPECT_EQ(componentCount(20, *r), 1u);
  EXPECT_EQ(*r, *generateEdges(GraphKind::kRegular, 20, {.degree = 3, .seed = 3}));
  EXPECT_THAT(generateEdges(GraphKind::kRegular, 5, {.degree = 3}).error(), HasSubstr("even"));
}

TEST(Generators, RegularGraphsOfHigherDegreeAreDrawnToo) {
  // Rejection alone almost never finds a simple 8-regular graph on 64 nodes; pairing does.
  const auto r = generateEdges(GraphKind::kRegular, 64, {.degree = 8, .seed = 1});
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_THAT(degrees(64, *r), ::testing::Each(8u));
  EXPECT_EQ(componentCount(64, *r), 1u);
  for (const auto& [a, b] : *r) EXPECT_NE(a, b);
  EXPECT_EQ(std::set<Edge>(r->begin(), r->end()).size(), r->size());  // no repeated pair
  EXPECT_EQ(*r, *generateEdges(GraphKind::kRegular, 64, {.degree = 8, .seed = 1}));
}

Topology fromEdges(std::size_t n, std::vector<Edge> edges, std::size_t budget = 0) {
  return Topology(numberedNodes(n, {}), std::move(edges), budget);
}

TEST(Analysis, MetropolisWeightsByHand) {
  // Path 0 - 1 - 2: degrees 1, 2, 1, so every edge weighs 1/(1 + 2) = 1/3.
  const Eigen::MatrixXd w = metropolisWeights(fromEdges(3, {{0, 1}, {1, 2}}));
  Eigen::MatrixXd expected(3, 3);
  expected << 2.0 / 3, 1.0 / 3, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 1.0 / 3, 2.0 / 3;
  EXPECT_TRUE(w.isApprox(expected, 1e-15)) << w;
}

TEST(Analysis, SpectralGapMatchesClosedForms) {
  // Complete graph: W = J/n, eigenvalues 1 and 0.
  EXPECT_NEAR(checkTopology(fromEdges(6, *generateEdges(GraphKind::kComplete, 6, {}))).spectral_gap,
              1.0, 1e-12);
  // Ring of n with weights 1/3: eigenvalues 1/3 + 2/3 cos(2πk/n).
  const double second = 1.0 / 3 + 2.0 / 3 * std::cos(2 * std::numbers::pi / 5);
  EXPECT_NEAR(checkTopology(fromEdges(5, *generateEdges(GraphKind::kRing, 5, {}))).spectral_gap,
              1.0 - second, 1e-12);
  // Ring of 4: eigenvalue 1/3 + 2/3 cos(π) = -1/3 has the largest magnitude after 1.
  EXPECT_NEAR(checkTopology(fromEdges(4, *generateEdges(GraphKind::kRing, 4, {}))).spectral_gap,
              1.0 - 1.0 / 3, 1e-12);
}

TEST(Analysis, HonestFiedlerVectorSplitsTheWorlds) {
  auto edges = generateEdges(GraphKind::kTwoWorlds, 10, {.links = 1, .byzantine = 2});
  ASSERT_TRUE(edges.has_value());
  const Topology t(numberedNodes(10, {}), *edges, 2);
  const std::vector<double> v = honestFiedlerVector(t, {8, 9});
  ASSERT_EQ(v.size(), 10u);
  EXPECT_EQ(v[8], 0.0);
  EXPECT_EQ(v[9], 0.0);
  double sum = 0, norm = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    sum += v[i];
    norm += v[i] * v[i];
  }
  EXPECT_NEAR(sum, 0.0, 1e-9);  // orthogonal to the constant vector
  EXPECT_NEAR(norm, 1.0, 1e-9);
  // The sparsest cut is between the worlds: one sign on 0-3, the other on 4-7.
  for (std::size_t i = 1; i < 4; ++i) EXPECT_GT(v[0] * v[i], 0) << i;
  for (std::size_t i = 4; i < 8; ++i) EXPECT_LT(v[0] * v[i], 0) << i;
  EXPECT_THROW(honestFiedlerVector(t, {1, 2, 3, 4, 5, 6, 7, 8, 9}), TopologyError);
}

// η = 1/λ_max of the honest Metropolis Laplacian, by hand (the ICML 2025 paper's step).
TEST(Analysis, HonestGossipStepByHand) {
  // Path 0-1-2-3, all honest: every edge weighs 1/(1 + 2) = 1/3, so L = L_path / 3 and
  // λ_max = (2 + √2) / 3 (the path's Laplacian has eigenvalues 2 − 2cos(kπ/4)).
  const Topology path = fromEdges(4, {{0, 1}, {1, 2}, {2, 3}});
  EXPECT_NEAR(honestGossipStep(path, {}), 3.0 / (2.0 + std::sqrt(2.0)), 1e-12);
  // K4 with node 3 Byzantine: the honest triangle keeps the whole graph's weights 1/(1 + 3),
  // so L = L_K3 / 4 with λ_max = 3/4: η = 4/3 (above 1, as the paper's steps are from f = 5).
  const Topology k4 = fromEdges(4, {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}});
  EXPECT_NEAR(honestGossipStep(k4, {3}), 4.0 / 3.0, 1e-12);
  // Two honest nodes that are not neighbours: no honest edge, no step.
  EXPECT_THROW(honestGossipStep(fromEdges(3, {{0, 2}, {1, 2}}), {2}), TopologyError);
}

// The reference's convention: an edge to a Byzantine node weighs the row's largest honest one.
TEST(Analysis, ByzantineMaxWeightByHand) {
  // Node 0: neighbours 1 (degree 1), 2 (degree 4) and Byzantine 3 (degree 5); 0 has degree 3.
  const Topology t = fromEdges(
      11, {{0, 1}, {0, 2}, {0, 3}, {2, 4}, {2, 5}, {2, 6}, {3, 7}, {3, 8}, {3, 9}, {3, 10}});
  EXPECT_DOUBLE_EQ(metropolisWeight(t, 0, 3), 1.0 / 6);         // 1 / (1 + max(3, 5))
  EXPECT_DOUBLE_EQ(byzantineMaxWeight(t, 0, 3, {3}), 1.0 / 4);  // W_01 = 1 / (1 + 3)
  EXPECT_DOUBLE_EQ(byzantineMaxWeight(t, 0, 2, {3}), 1.0 / 5);  // honest: Metropolis
  EXPECT_DOUBLE_EQ(byzantineMaxWeight(t, 0, 3, {}), 1.0 / 6);   // none declared
  EXPECT_DOUBLE_EQ(byzantineMaxWeight(t, 7, 3, {3}), 0.0);      // no honest neighbour
}

TEST(Analysis, BudgetsAndConnectivityWarnings) {
  EXPECT_EQ(tolerableBudget(2), 1u);  // 3 vectors: one may lie
  EXPECT_EQ(tolerableBudget(3), 1u);  // 4 vectors: two liars would tie the honest
  EXPECT_EQ(tolerableBudget(9), 4u);
  auto c = checkTopology(fromEdges(5, *generateEdges(GraphKind::kRing, 5, {}), 1));
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_EQ(c.components, 1u);
  // deg 2 = 2b: holds, at the price of stallers pacing rounds to the deadline, said once for
  // every honest node concerned.
  ASSERT_EQ(c.cautions.size(), 1u);
  EXPECT_THAT(c.cautions[0], HasSubstr("nodes 0, 1, 2, 3, 4 have at most twice"));
  c = checkTopology(fromEdges(5, *generateEdges(GraphKind::kRing, 5, {}), 1), {1, 2, 3, 4});
  ASSERT_EQ(c.cautions.size(), 1u);
  EXPECT_THAT(c.cautions[0], HasSubstr("node 0 has at most twice its"));
  EXPECT_TRUE(
      checkTopology(fromEdges(5, *generateEdges(GraphKind::kRing, 5, {}), 0)).cautions.empty());
  EXPECT_TRUE(
      checkTopology(fromEdges(9, *generateEdges(GraphKind::kTorus, 9, {}), 1)).cautions.empty());
  c = checkTopology(fromEdges(5, *generateEdges(GraphKind::kRing, 5, {}), 2));
  ASSERT_EQ(c.warnings.size(), 5u);
  EXPECT_THAT(c.warnings[0], HasSubstr("node 0: byzantine budget 2 cannot hold with 2"));
  c = checkTopology(fromEdges(4, {{0, 1}, {2, 3}}));
  EXPECT_EQ(c.components, 2u);
  EXPECT_NEAR(c.spectral_gap, 0.0, 1e-12);
  EXPECT_THAT(c.warnings.back(), HasSubstr("2 disconnected parts"));
}

TEST(Convert, DecentralizePyFormatsAndEdgeLists) {
  auto g = readGraphFile("3\n0 1\n1 0\n1 2\n", "decentralizepy-edges", "g.txt");
  EXPECT_THAT(g.ids, ElementsAre(0, 1, 2));
  EXPECT_EQ(g.edges, (std::vector<Edge>{{0, 1}, {1, 2}}));
  g = readGraphFile("4\n1 2\n0\n0 3\n2\n", "decentralizepy-adjacency", "a.txt");
  EXPECT_EQ(g.edges, (std::vector<Edge>{{0, 1}, {0, 2}, {2, 3}}));
  g = readGraphFile("# ids as written\n5 9\n\n9 12  # trailing\n", "edgelist", "e.txt");
  EXPECT_THAT(g.ids, ElementsAre(5, 9, 12));

  const Topology t = fromEdges(3, {{0, 1}, {1, 2}});
  EXPECT_EQ(writeGraphFile(t, "decentralizepy-edges"), "3\n0 1\n1 0\n1 2\n2 1\n");
  EXPECT_EQ(writeGraphFile(t, "decentralizepy-adjacency"), "3\n1\n0 2\n1\n");
  const auto back = readGraphFile(writeGraphFile(t, "edgelist"), "edgelist", "x");
  EXPECT_EQ(back.edges, t.edges());

  auto error = [](const std::string& text, const std::string& format) {
    try {
      readGraphFile(text, format, "bad.txt");
    } catch (const TopologyError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_THAT(error("3\n0 5\n", "decentralizepy-edges"), HasSubstr("bad.txt:2: node 5"));
  EXPECT_THAT(error("x\n", "decentralizepy-edges"), HasSubstr("bad.txt:1: the first line"));
  EXPECT_THAT(error("1 2 3\n", "edgelist"), HasSubstr("bad.txt:1: expected two node ids"));
  EXPECT_THAT(error("2\n1\n0\n1\n", "decentralizepy-adjacency"), HasSubstr("more adjacency lines"));
  EXPECT_THAT(error("1 1\n", "edgelist"), HasSubstr("joins a node to itself"));
  EXPECT_THAT(error("", "graphml"), HasSubstr("unknown graph format"));
  const Topology gapped(std::vector<NodeSpec>{{.id = 0, .port = 1}, {.id = 2, .port = 2}}, {{0, 2}},
                        0);
  EXPECT_THROW(writeGraphFile(gapped, "decentralizepy-edges"), TopologyError);
}

TEST(Analysis, MostByzantineNeighboursOfAnHonestNode) {
  // Ring 0-1-2-3-4-5-0 with 1 and 3 Byzantine: node 2 has both, 0 and 4 one each; the
  // Byzantine nodes are not counted as the node with the most.
  const Topology ring(numberedNodes(6, {}), *generateEdges(GraphKind::kRing, 6, {}), 1);
  const MostByzantineNeighbours most = mostByzantineNeighbours(ring, {1, 3});
  EXPECT_EQ(most.count, 2u);
  EXPECT_EQ(most.node, 2u);
  // Adjacent attackers 1 and 2: each honest node next to them has one; the lowest is 0.
  const MostByzantineNeighbours adjacent = mostByzantineNeighbours(ring, {1, 2});
  EXPECT_EQ(adjacent.count, 1u);
  EXPECT_EQ(adjacent.node, 0u);
  // Complete graph: every honest node has all f.
  const Topology complete(numberedNodes(7, {}), *generateEdges(GraphKind::kComplete, 7, {}), 2);
  EXPECT_EQ(mostByzantineNeighbours(complete, {4, 5, 6}).count, 3u);
  EXPECT_EQ(mostByzantineNeighbours(complete, {}).count, 0u);
}

TEST(Analysis, BreakdownCheckByHand) {
  // K5 honest, Byzantine node 5 next to 0 and 1: mu_2(K5) = 5, b = 1, 2b / mu_2 = 0.4.
  std::vector<Edge> edges = *generateEdges(GraphKind::kComplete, 5, {});
  edges.push_back({0, 5});
  edges.push_back({1, 5});
  BreakdownCheck b = breakdownCheck(Topology(numberedNodes(6, {}), edges, 1), {5});
  EXPECT_NEAR(b.honest_connectivity, 5.0, 1e-9);
  EXPECT_EQ(b.byzantine_per_node, 1u);
  EXPECT_EQ(b.worst_node, 0u);
  EXPECT_NEAR(b.ratio, 0.4, 1e-9);
  EXPECT_FALSE(b.beyond());
  // The path 0-1-2 (Laplacian eigenvalues 0, 1, 3) with node 3 next to all three: 2b = 2 >= 1.
  b = breakdownCheck(Topology(numberedNodes(4, {}), {{0, 1}, {1, 2}, {0, 3}, {1, 3}, {2, 3}}, 1),
                     {3});
  EXPECT_NEAR(b.honest_connectivity, 1.0, 1e-9);
  EXPECT_NEAR(b.ratio, 2.0, 1e-9);
  EXPECT_TRUE(b.beyond());
  // Two worlds of 4 joined by a perfect matching, 2 attackers next to everyone: the cut vector
  // (+1 on one world, -1 on the other) gives 2, the vectors inside a world 4 and 6: mu_2 = 2.
  auto two = generateEdges(GraphKind::kTwoWorlds, 10, {.links = 1, .byzantine = 2});
  ASSERT_TRUE(two.has_value());
  b = breakdownCheck(Topology(numberedNodes(10, {}), *two, 2), {8, 9});
  EXPECT_NEAR(b.honest_connectivity, 2.0, 1e-9);
  EXPECT_EQ(b.byzantine_per_node, 2u);
  EXPECT_NEAR(b.ratio, 2.0, 1e-9);
  // Nobody Byzantine: ratio 0. A split honest graph with an attacker: infinitely beyond.
  EXPECT_EQ(breakdownCheck(Topology(numberedNodes(3, {}), {{0, 1}, {1, 2}}, 0), {}).ratio, 0.0);
  b = breakdownCheck(Topology(numberedNodes(5, {}), {{0, 1}, {2, 3}, {1, 4}, {2, 4}}, 1), {4});
  EXPECT_EQ(b.honest_connectivity, 0.0);
  EXPECT_TRUE(std::isinf(b.ratio));
  EXPECT_THROW(breakdownCheck(Topology(numberedNodes(3, {}), {{0, 1}, {1, 2}}, 0), {7}),
               TopologyError);
  EXPECT_THROW(breakdownCheck(Topology(numberedNodes(3, {}), {{0, 1}, {1, 2}}, 0), {0, 1}),
               TopologyError);
}

}  // namespace
}  // namespace phalanx::topologies
