// `phalanx lab` and `phalanx bench` driven as a user would, on .npy files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/device.h"
#include "node/npy.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace phalanx {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;
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
  EXPECT_THAT(r.output, HasSubstr("\"kept\":[0,1,1,1]"));
  EXPECT_THAT(r.output, HasSubstr("\"pivot\":1"));
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
  r = runProcess(phalanxBinary() + " lab aggregate --rule nna --pre median --in " + in + " --out " +
                 out);
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
  r = runProcess(phalanxBinary() + " lab attack --name foe --tau 0.1 --in " + in + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(node::readNpy(out).data, (std::vector<float>{1.8f, 2.7f}));  // 0.9 mean(H)
  r = runProcess(phalanxBinary() + " lab attack --name spectral --tau 2 --target 0 --f 1 " +
                 "--fiedler -0.7071067811865476,0.7071067811865476 --in " + in + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // d = v_0 (v_0 x_0 + v_1 x_1) = -0.5 (-(1, 2) + (3, 4)) = (-1, -1); x_0 + 2 d = (-1, 0).
  EXPECT_THAT(node::readNpy(out).data, ElementsAre(FloatNear(-1, 1e-5), FloatNear(0, 1e-5)));
  r = runProcess(phalanxBinary() + " lab attack --name spectral --target 0 --in " + in + " --out " +
                 out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("needs --fiedler"));
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

TEST(BenchCli, QuickAttackRunComparesTheSharedSearchWithOnePerColluder) {
  const auto r = runProcess(phalanxBinary() +
                            " bench attack --quick --benchmark_filter=opt_foe "
                            "--benchmark_min_time=0.01");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("\"name\": \"attack/opt_foe/nna/h:8/d:4096/f:8/shared/manual_time\""));
  EXPECT_THAT(r.output, HasSubstr("\"name\": \"attack/opt_foe/nna/h:8/d:4096/f:8/every_colluder"));
  EXPECT_THAT(
      r.output,
      HasSubstr("\"name\": \"attack/opt_foe/cs_plus_pt/h:8/d:4096/f:8/shared/manual_time\""));
  EXPECT_THAT(r.output, HasSubstr("\"searches_per_round\": 8"));
  EXPECT_THAT(r.output, HasSubstr("\"ratio_to_shared_f1\""));
}

TEST(BenchCli, QuickDigestRunTimesBlake3BesideSha256) {
  const auto r = runProcess(phalanxBinary() + " bench digest --quick --benchmark_min_time=0.01");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"name\": \"digest/blake3/d:4096/manual_time\""));
  EXPECT_THAT(r.output, HasSubstr("\"name\": \"digest/sha256/d:4096/manual_time\""));
  EXPECT_THAT(r.output, HasSubstr("\"ratio_to_floor\""));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("error_occurred")));
}

TEST(LabCli, CompressRoundTripsAFileAndReportsJson) {
  testing::TempDir dir;
  const auto in = writeRows(dir, "w.npy", {{1, 2, 3, 4}, {2, 4, 6, 8}, {-1, -2, -3, -4}});
  const auto out = (dir.path() / "y.npy").string();
  // A rank-1 matrix: powersgd at rank 1 recovers it (the 2-D input is one layer).
  auto r = runProcess(phalanxBinary() + " lab compress --codec powersgd --rank 1 --in " + in +
                      " --out " + out + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"codec\":\"powersgd\",\"dim\":12"));
  EXPECT_THAT(r.output, HasSubstr("\"dense_bytes\":48"));
  const auto y = node::readNpy(out);
  EXPECT_EQ(y.shape, (std::vector<std::size_t>{3, 4}));
  EXPECT_NEAR(y.data[11], -4.0f, 1e-4f);
  r = runProcess(phalanxBinary() + " lab compress --codec topk --density 0.25 --in " + in +
                 " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // |4| at 3 and |-4| at 11 tie: the lower index wins.
  EXPECT_EQ(node::readNpy(out).data, (std::vector<float>{0, 0, 0, 4, 0, 0, 6, 8, 0, 0, 0, 0}));
}

TEST(LabCli, CompressGeneratesVectorsAndMeetsTheSizeTargets) {
  auto r = runProcess(phalanxBinary() +
                      " lab compress --codec topk --density 0.01 --values fp16 "
                      "--dim 1000000 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GE(nlohmann::json::parse(r.output)["ratio"].get<double>(), 100.0) << r.output;
  r = runProcess(phalanxBinary() +
                 " lab compress --codec sign --dim 1000000 --dist uniform --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GE(nlohmann::json::parse(r.output)["ratio"].get<double>(), 30.0) << r.output;
}

TEST(LabCli, CompressRejectsBadInput) {
  auto r = runProcess(phalanxBinary() + " lab compress --codec topk");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--in x.npy or --dim D"));
  r = runProcess(phalanxBinary() + " lab compress --codec qsgd --bits 1 --dim 10");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("compression.bits"));
  r = runProcess(phalanxBinary() + " lab compress --codec powersgd --dim 10");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("layer shapes"));
  r = runProcess(phalanxBinary() + " lab compress --codec zip --dim 10");
  EXPECT_EQ(r.exit_code, 2);
}

TEST(BenchCli, QuickCompressRunPrintsJsonWithFloorRatios) {
  const auto r = runProcess(phalanxBinary() +
                            " bench compress --quick --benchmark_filter='floor|topk|sign' "
                            "--benchmark_min_time=0.01");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("\"name\": \"compress/topk_sampled:0.001/encode/d:15625/manual_time\""));
  EXPECT_THAT(r.output, HasSubstr("\"compression_ratio\""));
  EXPECT_THAT(r.output, HasSubstr("\"ratio_to_floor\""));
}

TEST(BenchCli, GpuSuiteRunsOnADeviceOrSaysWhyNot) {
  const auto r = runProcess(phalanxBinary() + " bench gpu --quick --benchmark_min_time=0.01");
  if (!kernels::builtWithCuda()) {
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.output, HasSubstr("built without CUDA"));
    return;
  }
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"name\": \"gpu/topk/d:65536/density:0.001/manual_time\""));
  EXPECT_THAT(r.output, HasSubstr("\"name\": \"gpu/pairwise/n:8/d:65536/manual_time\""));
  if (kernels::cudaDeviceCount() == 0) {
    EXPECT_THAT(r.output, HasSubstr("no CUDA device answers"));
  } else {
    EXPECT_THAT(r.output, HasSubstr("\"ratio_to_floor\""));
  }
}

TEST(BenchCli, NetPrintsThroughputAgainstRawSocketsAndTls) {
  const auto r = runProcess(phalanxBinary() + " bench net --bytes 2000000 --json 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"raw_gbps\": "));
  EXPECT_THAT(r.output, HasSubstr("\"plain_gbps\": "));
  EXPECT_THAT(r.output, HasSubstr("\"rtt_us_p50\": "));
  EXPECT_THAT(r.output,
              ::testing::Not(HasSubstr("\"tls_gbps\": null")));  // certificates made in-process
  const auto bad = runProcess(phalanxBinary() + " bench net --bytes 0");
  EXPECT_EQ(bad.exit_code, 2);
}

}  // namespace
}  // namespace phalanx
