// The subcommands' work called as library functions, without a process: lab, topology, monitor.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "node/npy.h"
#include "tests/support/temp_dir.h"
#include "tools/command.h"
#include "tools/lab_run.h"
#include "tools/monitor_run.h"
#include "tools/topology_run.h"

namespace phalanx::tools {
namespace {

using testing::TempDir;

// Five rows: four near 1, one far outlier; NNA with b = 1 from pivot 0 ignores the outlier.
TEST(LabRun, AggregateWritesTheRobustMixAndRefusesABadPivot) {
  TempDir dir;
  const std::vector<float> rows{1.0f, 1.0f, 1.1f, 0.9f, 0.9f, 1.1f, 1.0f, 1.0f, 100.f, -100.f};
  const std::size_t shape[] = {5, 2};
  node::writeNpy(dir.path() / "x.npy", shape, rows);
  LabAggregateOptions o{.rule = "nna", .b = 1};
  o.in = (dir.path() / "x.npy").string();
  o.out = (dir.path() / "z.npy").string();
  ASSERT_EQ(runLabAggregate(o), kExitOk);
  const node::NpyArray z = node::readNpy(o.out);
  ASSERT_EQ(z.data.size(), 2u);
  EXPECT_NEAR(z.data[0], 1.0, 0.1);
  EXPECT_NEAR(z.data[1], 1.0, 0.1);

  o.pivot = 5;
  EXPECT_EQ(runLabAggregate(o), kExitBadInput);
  o.pivot = 0;
  o.pre = "nnm,nosuch";
  EXPECT_EQ(runLabAggregate(o), kExitBadInput);
}

TEST(LabRun, CompressRoundTripsADenseVectorAndNeedsAnInput) {
  TempDir dir;
  LabCompressOptions o{.codec = "qsgd", .bits = 8, .dim = 1000};
  o.out = (dir.path() / "y.npy").string();
  ASSERT_EQ(runLabCompress(o), kExitOk);
  EXPECT_EQ(node::readNpy(o.out).data.size(), 1000u);
  LabCompressOptions none{.codec = "topk"};
  EXPECT_EQ(runLabCompress(none), kExitBadInput);
}

TEST(LabRun, APerTargetAttackNeedsItsTarget) {
  TempDir dir;
  const std::vector<float> rows{1, 2, 3, 4, 5, 6};
  const std::size_t shape[] = {3, 2};
  node::writeNpy(dir.path() / "h.npy", shape, rows);
  LabAttackOptions o{.name = "dissensus"};
  o.in = (dir.path() / "h.npy").string();
  o.out = (dir.path() / "a.npy").string();
  EXPECT_EQ(runLabAttack(o), kExitBadInput);
  o.target = 1;
  ASSERT_EQ(runLabAttack(o), kExitOk);
  for (float v : node::readNpy(o.out).data) EXPECT_TRUE(std::isfinite(v));
}

TEST(TopologyRun, CheckExitsOneOnAWarningAndTwoOnAnUnreadableFile) {
  TempDir dir;
  // A ring of 4 with budget 2: two neighbours cannot outvote two liars.
  const auto file = dir.write("ring.yaml",
                              "byzantine_budget: 2\n"
                              "nodes:\n"
                              "  - {id: 0, host: 127.0.0.1, port: 7000}\n"
                              "  - {id: 1, host: 127.0.0.1, port: 7001}\n"
                              "  - {id: 2, host: 127.0.0.1, port: 7002}\n"
                              "  - {id: 3, host: 127.0.0.1, port: 7003}\n"
                              "edges: [[0, 1], [1, 2], [2, 3], [3, 0]]\n");
  TopologyOptions o;
  o.file = file.string();
  o.json = true;
  EXPECT_EQ(runTopologyCheck(o), kExitFailure);
  o.file = (dir.path() / "missing.yaml").string();
  EXPECT_EQ(runTopologyCheck(o), kExitBadInput);
}

TEST(MonitorRun, FromAFolderWithoutPeersIsBadInput) {
  TempDir dir;
  MonitorOptions o;
  o.from = dir.path().string();
  EXPECT_EQ(runMonitor(o), kExitBadInput);
  MonitorOptions nothing;
  EXPECT_EQ(runMonitor(nothing), kExitBadInput);
}

}  // namespace
}  // namespace phalanx::tools
