// `phalanx topology gen|check|convert` driven as a user would, and every shipped topology file
// checked clean.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace phalanx {
namespace {

using ::testing::HasSubstr;
using testing::phalanxBinary;
using testing::runProcess;

TEST(TopologyCli, GenThenCheckAndConvertRoundTrip) {
  testing::TempDir dir;
  const auto yaml = (dir.path() / "t.yaml").string();
  auto r = runProcess(phalanxBinary() + " topology gen --kind torus --n 9 --base-port 8100 " +
                      "--metrics-base-port 8200 --byzantine-budget 1 > " + yaml);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = runProcess(phalanxBinary() + " topology check " + yaml);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("nodes 9, edges 18, degree min 4"));
  EXPECT_THAT(r.output, HasSubstr("connected: yes"));

  const auto dpy = (dir.path() / "g.txt").string();
  r = runProcess(phalanxBinary() + " topology convert " + yaml + " --to decentralizepy-edges > " +
                 dpy);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = runProcess(phalanxBinary() + " topology convert " + dpy +
                 " --from decentralizepy-edges --base-port 8100 --metrics-base-port 8200");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("{id: 8, host: \"127.0.0.1\", port: 8108, metrics_port: 8208}"));

  // Regions for the WAN link classes, written into the file and said in its command line.
  r = runProcess(phalanxBinary() + " topology gen --kind torus --n 9 --regions 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--regions 3"));
  EXPECT_THAT(r.output, HasSubstr("port: 7002, metrics_port: 9002, region: \"r0\"}"));
  EXPECT_THAT(r.output, HasSubstr("port: 7008, metrics_port: 9008, region: \"r2\"}"));
  r = runProcess(phalanxBinary() + " topology gen --kind complete --n 2 --regions 3");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("more regions than the 2 nodes"));
}

TEST(TopologyCli, CheckWarnsAndFailsWhereTheBudgetCannotHold) {
  testing::TempDir dir;
  const auto yaml = dir.write("r.yaml",
                              "byzantine_budget: 2\n"
                              "nodes: [{id: 0, port: 7000}, {id: 1, port: 7001},"
                              " {id: 2, port: 7002}]\n"
                              "generator: {kind: ring}\n");
  auto r = runProcess(phalanxBinary() + " topology check --json " + yaml.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"tolerable\":1"));
  EXPECT_THAT(r.output, HasSubstr("budget 2 cannot hold"));
  // Two parts that never meet: reported in both the table and the JSON.
  const auto split = dir.write("split.yaml",
                               "nodes: [{id: 0, port: 7000}, {id: 1, port: 7001},"
                               " {id: 2, port: 7002}, {id: 3, port: 7003}]\n"
                               "edges: [[0, 1], [2, 3]]\n");
  r = runProcess(phalanxBinary() + " topology check " + split.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("connected: no (2 components)"));
  r = runProcess(phalanxBinary() + " topology check --json " + split.string());
  EXPECT_THAT(r.output, HasSubstr("\"connected\":false"));
  r = runProcess(phalanxBinary() + " topology check " +
                 dir.write("bad.yaml", "nodes: [{id: 0}]\nedges: []\n").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("bad.yaml: nodes[0].port: missing"));
  r = runProcess(phalanxBinary() + " topology gen --kind regular --n 5 --degree 3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("n * degree even"));
}

TEST(TopologyCli, CheckReportsTheBreakdownBoundOfAPlacement) {
  testing::TempDir dir;
  // Two worlds of 13 honest peers, 8 links each across (mu_2 = 16), f attackers next to all.
  const auto gen = [&](int f) {
    const auto yaml = (dir.path() / fmt::format("tw-{}.yaml", f)).string();
    const auto r =
        runProcess(phalanxBinary() + fmt::format(" topology gen --kind two_worlds --n {} "
                                                 "--links 8 --byzantine {} > {}",
                                                 26 + f, f, yaml));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return yaml;
  };
  auto r = runProcess(phalanxBinary() + " topology check " + gen(7) +
                      " --byzantine 26,27,28,29,30,31,32");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("mu_2 = 16.0000, b = 7 Byzantine neighbours (node 0), 2b / mu_2 "
                                  "= 0.875: within the bound"));
  r = runProcess(phalanxBinary() + " topology check --json " + gen(9) +
                 " --byzantine 26,27,28,29,30,31,32,33,34");
  EXPECT_EQ(r.exit_code, 1) << r.output;  // beyond: a warning
  EXPECT_THAT(r.output, HasSubstr("\"byzantine_per_node\":9"));
  EXPECT_THAT(r.output, HasSubstr("\"beyond\":true"));
  EXPECT_THAT(r.output, HasSubstr("beyond the breakdown bound (2b = 18 >= mu_2 = 16.0000)"));
  // No --byzantine: no bound; an id the graph lacks: bad input.
  r = runProcess(phalanxBinary() + " topology check --json " + gen(1));
  EXPECT_THAT(r.output, HasSubstr("\"breakdown\":null"));
  r = runProcess(phalanxBinary() + " topology check " + gen(1) + " --byzantine 99");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("byzantine id 99 is not a node of the topology"));
}

TEST(TopologyCli, ShippedTopologiesAreValid) {
  int checked = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(testing::sourceDir() + "/topologies")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const auto r = runProcess(phalanxBinary() + " topology check " + entry.path().string());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

}  // namespace
}  // namespace phalanx
