// Where an attacker puts its Byzantine peers (`phalanx topology place`), by hand on small graphs:
// betweenness, each strategy's choice, and the budgets every placement keeps.
#include "topologies/placement.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "topologies/generators.h"

namespace phalanx::topologies {
namespace {

Topology graph(std::size_t n, std::vector<Edge> edges, std::size_t budget) {
  return Topology(numberedNodes(n, {}), std::move(edges), budget);
}

// Every honest node has at most its budget of Byzantine neighbours.
bool withinBudgets(const Topology& t, const std::vector<NodeId>& placed) {
  const std::set<NodeId> byzantine(placed.begin(), placed.end());
  for (const auto& node : t.nodes()) {
    if (byzantine.contains(node.id)) continue;
    std::size_t count = 0;
    for (const NodeId n : t.neighbours(node.id)) count += byzantine.contains(n) ? 1 : 0;
    if (count > t.budgetOf(node.id)) return false;
  }
  return true;
}

TEST(Placement, BetweennessByHand) {
  // Path 0 - 1 - 2 - 3: node 1 is on the shortest paths 0-2 and 0-3, node 2 on 0-3 and 1-3.
  EXPECT_EQ(betweenness(graph(4, {{0, 1}, {1, 2}, {2, 3}}, 0)), (std::vector<double>{0, 2, 2, 0}));
  // Star: the centre is on every one of the C(4, 2) = 6 leaf pairs' paths.
  EXPECT_EQ(betweenness(graph(5, {{0, 1}, {0, 2}, {0, 3}, {0, 4}}, 0)),
            (std::vector<double>{6, 0, 0, 0, 0}));
  // A 4-cycle: two shortest paths between opposite corners, each through one of the others.
  EXPECT_EQ(betweenness(graph(4, {{0, 1}, {1, 2}, {2, 3}, {0, 3}}, 0)),
            (std::vector<double>{0.5, 0.5, 0.5, 0.5}));
}

TEST(Placement, CentralityTakesTheHubThenTheLowestLeaf) {
  const Topology star = graph(5, {{0, 1}, {0, 2}, {0, 3}, {0, 4}}, 1);
  const Placement p = placeByzantine(star, 2, PlacementStrategy::kCentrality, 0);
  EXPECT_EQ(p.byzantine, (std::vector<NodeId>{0, 1}));
  EXPECT_TRUE(p.complete());
}

TEST(Placement, CutTakesABridgeEnd) {
  // Two 4-cliques joined by the edge 3 - 4: either end of it cuts the honest graph in two
  // (mu_2 = 0); the lower id wins the tie. Centrality picks the same two first.
  std::vector<Edge> edges{{3, 4}};
  for (NodeId a = 0; a < 4; ++a) {
    for (NodeId b = a + 1; b < 4; ++b) {
      edges.push_back({a, b});
      edges.push_back({NodeId(a + 4), NodeId(b + 4)});
    }
  }
  const Topology t = graph(8, edges, 1);
  const Placement cut = placeByzantine(t, 1, PlacementStrategy::kCut, 0);
  EXPECT_EQ(cut.byzantine, (std::vector<NodeId>{3}));
  ASSERT_TRUE(cut.breakdown);
  EXPECT_EQ(cut.breakdown->honest_connectivity, 0.0);
  EXPECT_TRUE(cut.breakdown->beyond());
  EXPECT_EQ(placeByzantine(t, 1, PlacementStrategy::kCentrality, 0).byzantine,
            (std::vector<NodeId>{3}));
}

TEST(Placement, MaxSpanReachesTheMostHonestNodesWhereCentralityTakesTheBridge) {
  // Two 4-cliques {0..3} and {4..7} joined through node 8 (3 - 8 - 4), budget 1. Betweenness:
  // 8 carries the 16 cross pairs, 3 and 4 carry 15 each, the others none. Centrality takes 8,
  // then 3. Maxspan takes 3 (reaches 0, 1, 2 and 8; 4 reaches as many, 3 wins the tie by id),
  // then cannot take 4 (8 would have two Byzantine neighbours) or 0..2 (they already face 3),
  // so 5: it reaches 4, 6 and 7, three new honest nodes, as 6 and 7 would.
  std::vector<Edge> edges{{3, 8}, {4, 8}};
  for (NodeId a = 0; a < 4; ++a) {
    for (NodeId b = a + 1; b < 4; ++b) {
      edges.push_back({a, b});
      edges.push_back({NodeId(a + 4), NodeId(b + 4)});
    }
  }
  const Topology t = graph(9, edges, 1);
  EXPECT_EQ(betweenness(t), (std::vector<double>{0, 0, 0, 15, 15, 0, 0, 0, 16}));
  EXPECT_EQ(placeByzantine(t, 2, PlacementStrategy::kCentrality, 0).byzantine,
            (std::vector<NodeId>{3, 8}));
  const Placement span = placeByzantine(t, 2, PlacementStrategy::kMaxSpan, 0);
  EXPECT_EQ(span.byzantine, (std::vector<NodeId>{3, 5}));
  EXPECT_TRUE(withinBudgets(t, span.byzantine));
  // Every honest node now faces one Byzantine neighbour, its budget: a third cannot fit.
  EXPECT_FALSE(placeByzantine(t, 3, PlacementStrategy::kMaxSpan, 0).complete());
}

TEST(Placement, BudgetsHoldAndAShortPlacementSaysSo) {
  // Complete graph of 4, budget 1: a second Byzantine peer would give every honest node two.
  const Topology k4 = graph(4, {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}}, 1);
  for (const auto s : {PlacementStrategy::kRandom, PlacementStrategy::kCentrality,
                       PlacementStrategy::kCut, PlacementStrategy::kMaxSpan}) {
    const Placement p = placeByzantine(k4, 2, s, 3);
    EXPECT_EQ(p.byzantine.size(), 1u);
    EXPECT_FALSE(p.complete());
  }
  // Ring of 8, budget 1: every seed's random placement keeps each honest node within it, and is
  // the same for the same seed.
  std::vector<Edge> ring;
  for (NodeId i = 0; i < 8; ++i)
    ring.push_back({std::min<NodeId>(i, (i + 1) % 8), std::max<NodeId>(i, (i + 1) % 8)});
  const Topology t = graph(8, ring, 1);
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const Placement p = placeByzantine(t, 3, PlacementStrategy::kRandom, seed);
    EXPECT_TRUE(withinBudgets(t, p.byzantine)) << seed;
    EXPECT_EQ(p.byzantine, placeByzantine(t, 3, PlacementStrategy::kRandom, seed).byzantine);
  }
  EXPECT_TRUE(withinBudgets(t, placeByzantine(t, 3, PlacementStrategy::kCut, 0).byzantine));
  EXPECT_TRUE(withinBudgets(t, placeByzantine(t, 3, PlacementStrategy::kMaxSpan, 0).byzantine));
}

}  // namespace
}  // namespace phalanx::topologies
