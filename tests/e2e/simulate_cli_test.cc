// `phalanx simulate` as a user runs it: the same files twice from the same seed, the same
// results as `phalanx launch` on the same synchronous config, and the experiment runner with
// --engine simulate (a cell that runs the same as another runs once).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/json_files.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace phalanx {
namespace {

using ::testing::HasSubstr;
using testing::jsonFile;
using testing::jsonLines;
using testing::phalanxBinary;
using testing::readFile;
using testing::runProcess;
using testing::sourceDir;
namespace fs = std::filesystem;

fs::path topology(const testing::TempDir& dir, const std::string& gen) {
  const fs::path t = dir.path() / "t.yaml";
  EXPECT_TRUE(testing::generateTopology(t, gen)) << gen;
  return t;
}

TEST(SimulateCli, TwoRunsWriteTheSameRecordsAndAReport) {
  testing::TempDir dir;
  const fs::path t = topology(dir, "--kind torus --n 16 --byzantine-budget 1");
  const std::string base = phalanxBinary() + " simulate --topology " + t.string() + " --config " +
                           sourceDir() +
                           "/configs/experiments/smoke-base.yaml --rounds 40 --set "
                           "rounds.quorum=true --set compression.codec=topk --set "
                           "compression.density=0.1 --byzantine 5 --attack alie --out ";
  // The second with one thread, the compute floor measured after its rounds (which must not
  // change them), and a slow peer whose neighbours' deadlines fire.
  const auto faults = dir.path() / "faults.txt";
  std::ofstream(faults) << "0.05 3 slow 2500\n0.3 3 heal\n";
  const auto a = runProcess(base + (dir.path() / "a").string() + " --faults " + faults.string() +
                            " --progress");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  // --json: stdout (stderr dropped here) is one object, the summary and simulation.json's own.
  const auto b = runProcess("(" + base + (dir.path() / "b").string() + " --faults " +
                            faults.string() + " --threads 1 --floor 20 --json 2>/dev/null)");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  // The progress line: asked for, it ends at every peer-round; by default (stderr not a
  // terminal) there is none.
  EXPECT_THAT(a.output, HasSubstr("simulate: 640/640 peer-rounds (100%)"));
  EXPECT_THAT(b.output, ::testing::Not(HasSubstr("peer-rounds/s")));
  const auto printed = nlohmann::json::parse(b.output, nullptr, false);
  ASSERT_FALSE(printed.is_discarded()) << b.output;
  EXPECT_EQ(printed["summary"]["rounds"], 40);
  EXPECT_EQ(printed["simulation"]["peers"], 16);
  EXPECT_EQ(printed["files"]["report"], (dir.path() / "b" / "report.html").string());
  // Every peer's log in the one format (base/log_format.h): time, level, who, message.
  const std::string log = readFile(dir.path() / "a" / "simulation.log");
  ASSERT_FALSE(log.empty());
  EXPECT_THAT(log.substr(0, log.find('\n')),
              ::testing::MatchesRegex("[0-9-]+T[0-9:.]+ [a-z]+ node-[0-9]+: .*"));
  bool deadline = false;
  for (int i = 0; i < 16; ++i) {
    const std::string name = "node-" + std::to_string(i) + ".jsonl";
    const std::string one = readFile(dir.path() / "a" / name);
    EXPECT_FALSE(one.empty()) << name;
    EXPECT_EQ(one, readFile(dir.path() / "b" / name)) << name;
    deadline |= one.find("\"deadline_hit\": true") != std::string::npos;
  }
  EXPECT_TRUE(deadline);
  const auto summary = jsonFile(dir.path() / "a" / "summary.json");
  EXPECT_EQ(summary["rounds"].get<int>(), 40);
  EXPECT_EQ(summary["byzantine"], nlohmann::json::array({5}));
  EXPECT_THAT(readFile(dir.path() / "a" / "report.html"), HasSubstr("<svg"));
  const auto sim = jsonFile(dir.path() / "a" / "simulation.json");
  EXPECT_EQ(sim["peers"].get<int>(), 16);
  EXPECT_EQ(sim["peer_rounds"].get<int>(), 16 * 40);
  EXPECT_FALSE(sim.contains("floor"));
  // Eight learners (8 per thread, of the fifteen honest peers), 20 local steps each.
  const auto floor = jsonFile(dir.path() / "b" / "simulation.json");
  EXPECT_EQ(floor["floor"]["learners"].get<int>(), 8);
  EXPECT_EQ(floor["floor"]["steps"].get<int>(), 160);
  EXPECT_GT(floor["floor"]["peer_rounds_per_second"].get<double>(), 0);
  EXPECT_GT(floor["share_of_floor"].get<double>(), 0);
  EXPECT_NEAR(floor["share_of_floor"].get<double>(),
              floor["rounds_peer_rounds_per_second"].get<double>() /
                  floor["floor"]["peer_rounds_per_second"].get<double>(),
              1e-3);
}

TEST(SimulateCli, GivesWhatLaunchGivesOnTheSameSynchronousConfig) {
  // Synchronous rounds (the smoke base: quorum off) and no deadline firing: every peer mixes the
  // same messages in both, so the models, accuracies and round-message bytes agree; only
  // heartbeats and handshakes (wall-clock paced) differ.
  testing::TempDir dir;
  const fs::path t = topology(dir,
                              "--kind complete --n 10 --byzantine-budget 2 --base-port 23000 "
                              "--metrics-base-port 23100");
  const std::string args = " --topology " + t.string() + " --config " + sourceDir() +
                           "/configs/experiments/smoke-base.yaml --rounds 40 --byzantine 8,9 "
                           "--attack alie --out ";
  const auto launched =
      runProcess(phalanxBinary() + " launch" + args + (dir.path() / "l").string());
  ASSERT_EQ(launched.exit_code, 0) << launched.output;
  const auto simulated =
      runProcess(phalanxBinary() + " simulate" + args + (dir.path() / "s").string());
  ASSERT_EQ(simulated.exit_code, 0) << simulated.output;
  const auto l = jsonFile(dir.path() / "l" / "summary.json");
  const auto s = jsonFile(dir.path() / "s" / "summary.json");
  EXPECT_NEAR(l["honest_accuracy_mean"].get<double>(), s["honest_accuracy_mean"].get<double>(),
              0.005);
  for (int i = 0; i < 8; ++i) {
    const auto lr = jsonLines(dir.path() / "l" / ("node-" + std::to_string(i) + ".jsonl"));
    const auto sr = jsonLines(dir.path() / "s" / ("node-" + std::to_string(i) + ".jsonl"));
    ASSERT_EQ(lr.size(), sr.size()) << i;
    for (std::size_t k = 0; k < lr.size(); ++k) {
      EXPECT_FALSE(lr[k]["deadline_hit"].get<bool>()) << i;
      EXPECT_EQ(lr[k]["mixed"], sr[k]["mixed"]) << i << " round " << k;
      EXPECT_EQ(lr[k]["dense_bytes_total"], sr[k]["dense_bytes_total"]) << i;
    }
    const double lb = lr.back()["bytes_sent_total"].get<double>();
    const double sb = sr.back()["bytes_sent_total"].get<double>();
    EXPECT_LT(std::abs(lb - sb) / lb, 0.02) << "peer " << i << ": " << lb << " vs " << sb;
  }
}

TEST(SimulateCli, ExperimentRunsCellsWithTheSimulateEngine) {
  testing::TempDir dir;
  const auto r = runProcess(phalanxBinary() + " experiment --engine simulate --grid " +
                            sourceDir() + "/configs/experiments/smoke.yaml --rounds 20 --out " +
                            (dir.path() / "grid").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir.path() / "grid" / "results.csv"));
  std::size_t cells = 0;
  for (const auto& cell : fs::directory_iterator(dir.path() / "grid" / "cells")) {
    EXPECT_TRUE(fs::exists(cell.path() / "run" / "simulation.json")) << cell.path();
    EXPECT_EQ(jsonFile(cell.path() / "result.json")["status"], "ok") << cell.path();
    ++cells;
  }
  EXPECT_GT(cells, 0u);
  // A breakdown's f = 0 column: without attackers every attack is the same clean run, which
  // runs once; the other cell gets its record and a log line that says whose.
  const fs::path grid =
      dir.write("breakdown.yaml", "config: " + sourceDir() +
                                      "/configs/experiments/smoke-base.yaml\n"
                                      "topology: {kind: complete, byzantine_budget: f}\nhonest: 5\n"
                                      "grid: {f: [0, 1], attack: [signflip, alie], rule: [nna]}\n");
  const std::string breakdown = phalanxBinary() + " experiment --engine simulate --grid " +
                                grid.string() + " --rounds 20 --out " +
                                (dir.path() / "breakdown").string();
  const auto once = runProcess(breakdown);
  ASSERT_EQ(once.exit_code, 0) << once.output;
  EXPECT_THAT(once.output, HasSubstr("4 cells, 3 to run (1 at a time) and 1 the same run"));
  const fs::path cells_dir = dir.path() / "breakdown" / "cells";
  const auto ran = jsonFile(cells_dir / "f-0_attack-signflip_rule-nna" / "result.json");
  const auto copied = jsonFile(cells_dir / "f-0_attack-alie_rule-nna" / "result.json");
  EXPECT_FALSE(fs::exists(cells_dir / "f-0_attack-alie_rule-nna" / "run"));
  EXPECT_THAT(readFile(cells_dir / "f-0_attack-alie_rule-nna" / "simulate.log"),
              HasSubstr("the same run as cell f-0_attack-signflip_rule-nna"));
  EXPECT_EQ(copied.value("status", ""), "ok") << copied.dump();
  EXPECT_EQ(copied, ran);
  const auto csv = readFile(dir.path() / "breakdown" / "results.csv");
  EXPECT_THAT(csv, HasSubstr("alie,nna,0,ok"));
  // --resume: nothing runs again; without the copy, the copy is made again, not the run.
  fs::remove_all(cells_dir / "f-0_attack-alie_rule-nna");
  const auto resumed = runProcess(breakdown + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_THAT(resumed.output, HasSubstr("4 cells, 0 to run (1 at a time) and 1 the same run"));
  EXPECT_EQ(jsonFile(cells_dir / "f-0_attack-alie_rule-nna" / "result.json"), ran);
  const auto bad = runProcess(phalanxBinary() + " simulate --topology " + sourceDir() +
                              "/topologies/ring-8.yaml --config " + sourceDir() +
                              "/configs/experiments/smoke-base.yaml --out " +
                              (dir.path() / "bad").string() + " --byzantine 99");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("no node 99"));
}

// A run into the folder of an earlier, bigger one: refused (the summary once averaged in the
// stale peers and reported the earlier run's rounds); with --force, the earlier files go first.
TEST(SimulateCli, AFolderHoldingAnEarlierRunIsRefusedUnlessForced) {
  testing::TempDir dir;
  const std::string config = sourceDir() + "/configs/experiments/smoke-base.yaml";
  const fs::path out = dir.path() / "run";
  const auto big = runProcess(phalanxBinary() + " simulate --topology " + sourceDir() +
                              "/topologies/complete-10.yaml --config " + config +
                              " --rounds 12 --out " + out.string());
  ASSERT_EQ(big.exit_code, 0) << big.output;
  const fs::path four = topology(dir, "--kind complete --n 4 --byzantine-budget 1");
  const std::string small = phalanxBinary() + " simulate --topology " + four.string() +
                            " --config " + config + " --rounds 5 --out " + out.string();
  const auto refused = runProcess(small);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("holds an earlier run"));
  EXPECT_EQ(jsonFile(out / "summary.json")["rounds"].get<int>(), 12);  // untouched
  const auto forced = runProcess(small + " --force");
  ASSERT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_EQ(jsonFile(out / "summary.json")["rounds"].get<int>(), 5);
  EXPECT_FALSE(fs::exists(out / "node-9.jsonl"));
  EXPECT_TRUE(fs::exists(out / "node-3.jsonl"));
}

}  // namespace
}  // namespace phalanx
