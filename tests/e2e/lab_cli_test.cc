// `phalanx lab` and `phalanx bench` driven as a user would, on .npy files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "node/npy.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace phalanx {
namespace {

using ::testing::HasSubstr;
using testing::phalanxBinary;
using testing::runProcess;

std::string writeRows(const testing::TempDir& dir, const std::string& name,
                      const std::vector<std::vector<float>>& rows) {
  std::vector<float> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  const std::size_t shape[] = {rows.size(), rows[0].size()};
  node::writeNpy(dir.path() / name, shape, flat);
  return (dir.path() / name).string();
}

TEST(LabCli, AggregateWritesTheMixAndReportsInFileOrder) {
  testing::TempDir dir;
  const auto in = writeRows(dir, "x.npy", {{100, 100}, {0, 0}, {1, 1}, {2, 2}});
  const auto out = (dir.path() / "z.npy").string();
  const auto r = runProcess(phalanxBinary() + " lab aggregate --rule nna --b 1 --pivot 1 --in " +
                            in + " --out " + out + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"kept\": [0, 1, 1, 1]"));
  EXPECT_THAT(r.output, HasSubstr("\"pivot\": 1"));
  EXPECT_EQ(node::readNpy(out).data, (std::vector<float>{1, 1}));
}

TEST(LabCli, AggregateWithPreAggregatorsAndBadInput) {
  testing::TempDir dir;
  const auto in = writeRows(dir, "x.npy", {{1}, {2}, {3}, {-100}});
  const auto out = (dir.path() / "z.npy").string();
  auto r = runProcess(phalanxBinary() + " lab aggregate --rule mean --pre arc --b 1 --in " + in +
                      " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(node::readNpy(out).data, (std::vector<float>{0.75f}));
  r = runProcess(phalanxBinary() + " lab aggregate --rule cwtm --b 2 --in " + in + " --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("cwtm: 2b = 4"));
  r = runProcess(phalanxBinary() + " lab aggregate --rule nna --pre median --in " + in + " --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("unknown pre-aggregator"));
  r = runProcess(phalanxBinary() + " lab aggregate --rule nna --in " +
                 dir.write("junk.npy", "garbage").string() + " --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("not a .npy file"));
}

TEST(LabCli, AttackCraftsFromHonestRows) {
  testing::TempDir dir;
  const auto in = writeRows(dir, "h.npy", {{1, 2}, {3, 4}});
  const auto out = (dir.path() / "a.npy").string();
  auto r = runProcess(phalanxBinary() + " lab attack --name signflip --in " + in + " --out " + out +
                      " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(node::readNpy(out).data, (std::vector<float>{-2, -3}));
  r = runProcess(phalanxBinary() + " lab attack --name dissensus --target 0 --f 2 --in " + in +
                 " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // W = 1/4 each, Byzantine weight 2/4: 1 - 1.5 * (0.25 * 2) / 0.5 = -0.5 (first coordinate).
  EXPECT_FLOAT_EQ(node::readNpy(out).data[0], -0.5f);
  r = runProcess(phalanxBinary() + " lab attack --name opt_alie --agg cwtm --b 1 --f 1 --in " + in +
                 " --out " + out + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;  // 3 rows, b = 1: 2b < |S|
  // b = 2 leaves cwtm nothing to average at any tau: an error, not a silent tau = 0.
  r = runProcess(phalanxBinary() + " lab attack --name opt_alie --agg cwtm --b 2 --f 1 --in " + in +
                 " --out " + out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cwtm: 2b = 4"));
}

TEST(BenchCli, QuickAggregateRunPrintsJsonWithFloorRatios) {
  const auto r = runProcess(phalanxBinary() +
                            " bench aggregate --quick --benchmark_filter='floor|nna|cwtm' "
                            "--benchmark_min_time=0.01");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"name\": \"aggregate/nna/n:8/d:4096/manual_time\""));
  EXPECT_THAT(r.output, HasSubstr("\"ratio_to_floor\""));
}

}  // namespace
}  // namespace phalanx
