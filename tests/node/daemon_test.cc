// --id auto: which node a launcher's rank picks (Kubernetes, Slurm, Open MPI).
#include "node/daemon.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "topologies/topology.h"

namespace phalanx::node {
namespace {

using ::testing::HasSubstr;

constexpr const char* kRanks[] = {"PHALANX_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"};

// Clears the rank variables for the test and restores nothing: tests in this binary do not read
// them otherwise.
struct CleanRanks {
  CleanRanks() {
    for (const char* v : kRanks) ::unsetenv(v);
  }
  ~CleanRanks() {
    for (const char* v : kRanks) ::unsetenv(v);
  }
};

std::string errorOf(const std::string& id, const topologies::Topology& t) {
  try {
    resolveNodeId(id, t);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ResolveNodeId, AutoTakesTheRankThInIdOrderPhalanxRankFirst) {
  const CleanRanks clean;
  const topologies::Topology t = topologies::parseTopology(
      "nodes: [{id: 4, port: 1}, {id: 8, port: 2}, {id: 15, port: 3}]\nedges: [[4, 8], [8, 15]]",
      "t.yaml");
  EXPECT_EQ(resolveNodeId("8", t), 8u);
  ::setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  EXPECT_EQ(resolveNodeId("auto", t), 4u);
  ::setenv("SLURM_PROCID", "1", 1);
  EXPECT_EQ(resolveNodeId("auto", t), 8u);  // Slurm before Open MPI
  ::setenv("PHALANX_RANK", "2", 1);
  EXPECT_EQ(resolveNodeId("auto", t), 15u);  // a pod's ordinal before both
  ::setenv("PHALANX_RANK", "3", 1);
  EXPECT_THAT(errorOf("auto", t), HasSubstr("PHALANX_RANK=3 but the topology has 3 nodes"));
}

TEST(ResolveNodeId, SaysWhatIsMissingOrWrong) {
  const CleanRanks clean;
  const topologies::Topology t = topologies::parseTopology(
      "nodes: [{id: 0, port: 1}, {id: 1, port: 2}]\nedges: [[0, 1]]", "t");
  EXPECT_THAT(errorOf("auto", t),
              HasSubstr("none of PHALANX_RANK, SLURM_PROCID and OMPI_COMM_WORLD_RANK is set"));
  EXPECT_THAT(errorOf("7", t), HasSubstr("--id 7: no such node"));
  EXPECT_THAT(errorOf("x1", t), HasSubstr("--id x1: expected a node id or auto"));
  EXPECT_THAT(errorOf("", t), HasSubstr("expected a node id or auto"));
}

}  // namespace
}  // namespace phalanx::node
