// Grid files by hand: parsing with errors that name the field, the product of the axes, filters,
// what a cell passes to launch (rules with pre-aggregators and tau, f, config fields), the CSV.
#include "tools/experiment.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "node/config.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tools/cell_record.h"
#include "tools/grid_report.h"
#include "topologies/placement.h"

namespace phalanx::tools {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Grid gridFrom(const testing::TempDir& dir, const std::string& yaml) {
  return loadGrid(dir.write("g.yaml", yaml));
}

// A cell that ran: its final accuracies, bytes and compression; the rest not measured.
CellResult ranCell(const Cell& c, double acc_mean, double acc_min, double wire_bytes,
                   double compression_ratio) {
  return {.cell = c,
          .status = CellStatus::kOk,
          .final_acc_mean = acc_mean,
          .final_acc_min = acc_min,
          .best_acc_mean = acc_mean,
          .consensus_distance = NAN,
          .byzantine_leakage = NAN,
          .detection_rate = NAN,
          .wire_bytes = wire_bytes,
          .compression_ratio = compression_ratio,
          .wall_seconds = 1};
}

TEST(Experiment, ExpandsTheProductAndFilters) {
  testing::TempDir dir;
  const Grid g =
      gridFrom(dir,
               "config: c.yaml\ntopology: {kind: complete, n: 5, byzantine_budget: 1}\nf: 1\n"
               "grid: {attack: [none, alie], rule: [nna, \"nnm+cwtm\", \"clipped_gossip:0.1\"], "
               "seed: [1, 2]}\n");
  EXPECT_EQ(g.config, dir.path() / "c.yaml");
  const auto all = expand(g, {});
  ASSERT_EQ(all.size(), 12u);
  EXPECT_EQ(all[0].name(), "attack-none_rule-nna_seed-1");
  EXPECT_EQ(all[1].name(), "attack-none_rule-nna_seed-2");  // the last axis varies fastest
  // A name too long for a folder keeps its start and a hash of the whole.
  const Cell a{.values = {{"settings", std::string(300, 'a')}}};
  const Cell b{.values = {{"settings", std::string(299, 'a') + "b"}}};
  EXPECT_EQ(a.name().size(), 240u);
  EXPECT_NE(a.name(), b.name());
  EXPECT_EQ(a.name().substr(0, 20), "settings-aaaaaaaaaaa");
  EXPECT_EQ(all[11].value("rule"), "clipped_gossip:0.1");
  EXPECT_EQ(expand(g, {"attack=alie", "rule=nna,nnm+cwtm"}).size(), 4u);
  EXPECT_THROW(expand(g, {"colour=red"}), GridError);
  EXPECT_THROW(expand(g, {"attack"}), GridError);
}

TEST(Experiment, CellPlansCarryRulesFieldsAndByzantinePeers) {
  testing::TempDir dir;
  const Grid g =
      gridFrom(dir,
               "config: c.yaml\ntopology: {kind: ring, n: 6, byzantine_budget: 1}\n"
               "set: [\"rounds.eval_every=5\"]\n"
               "grid: {f: [0, 2], rule: [\"nnm,clip:2.0+cwtm:0.5\"], optimizer.lr: [0.3]}\n");
  const auto cells = expand(g, {});
  ASSERT_EQ(cells.size(), 2u);
  const CellPlan none = planCell(g, cells[0], 30000);
  EXPECT_TRUE(none.byzantine.empty());
  const CellPlan two = planCell(g, cells[1], 30000);
  EXPECT_THAT(two.byzantine, ElementsAre(4, 5));  // the last f ids
  EXPECT_EQ(two.attack, "none");
  EXPECT_THAT(two.sets, ElementsAre("rounds.eval_every=5", "mixing.pre=[\"nnm\", \"clip:2.0\"]",
                                    "mixing.tau=0.5", "mixing.rule=cwtm", "optimizer.lr=0.3"));
  EXPECT_EQ(two.topology.node(5).port, 30005);
  EXPECT_EQ(two.topology.node(0).metrics_port, 30250);
  EXPECT_EQ(two.topology.degree(0), 2u);
  // A rule without a radius resets it (adaptive clipped_gossip), whatever the base config says.
  const Grid adaptive = gridFrom(
      dir, "config: c.yaml\ntopology: {kind: ring, n: 4}\ngrid: {rule: [clipped_gossip]}\n");
  EXPECT_THAT(planCell(adaptive, expand(adaptive, {})[0], 30000).sets,
              ElementsAre("mixing.pre=[]", "mixing.tau=0", "mixing.rule=clipped_gossip"));
}

TEST(Experiment, AttackParametersBundlesAndBreakdownSizes) {
  testing::TempDir dir;
  const Grid g = gridFrom(
      dir,
      "config: c.yaml\ntopology: {kind: complete, byzantine_budget: f}\nhonest: 4\ncollude: true\n"
      "grid:\n  f: [1]\n  attack: [\"alie:tau=10,sigma=2\"]\n"
      "  settings: [{exchange: gradient, compression.feedback: dgc}]\n");
  const auto cells = expand(g, {});
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].value("settings"), "exchange=gradient;compression.feedback=dgc");
  const CellPlan p = planCell(g, cells[0], 30000);
  EXPECT_EQ(p.topology.size(), 5u);  // 4 honest + f
  EXPECT_EQ(p.topology.defaultBudget(), 1u);
  EXPECT_THAT(p.byzantine, ElementsAre(4));
  EXPECT_EQ(p.attack, "alie");
  EXPECT_THAT(p.sets,
              ElementsAre("byzantine.4.collude=true", "byzantine.4.tau=10", "byzantine.4.sigma=2",
                          "exchange=gradient", "compression.feedback=dgc"));
}

TEST(Experiment, CellsWithoutAttackersRunOnceWhateverTheirAttack) {
  testing::TempDir dir;
  const Grid g = gridFrom(
      dir,
      "config: c.yaml\ntopology: {kind: complete, byzantine_budget: f}\nhonest: 4\ncollude: true\n"
      "grid:\n  f: [0, 1]\n  attack: [opt_alie, \"alie:tau=10\", none]\n  rule: [nna, cs_plus]\n");
  const auto cells = expand(g, {});
  std::vector<CellPlan> plans;
  for (const Cell& c : cells) plans.push_back(planCell(g, c, 30000));
  const auto first = firstOfSameRun(plans);
  ASSERT_EQ(first.size(), 12u);
  // f = 0: every attack runs the clean run of its rule, the first attack's.
  EXPECT_THAT(std::vector(first.begin(), first.begin() + 6), ElementsAre(0, 1, 0, 1, 0, 1));
  // f = 1: each attack (none included: a named attacker behaving honestly) is its own run.
  EXPECT_THAT(std::vector(first.begin() + 6, first.end()), ElementsAre(6, 7, 8, 9, 10, 11));
  // Another base port is another run (firstOfSameRun compares plans from one base port).
  plans[2] = planCell(g, cells[2], 31000);
  EXPECT_EQ(firstOfSameRun(plans)[2], 2u);
}

TEST(Experiment, EveryShippedGridPlansEveryCellWithAValidConfig) {
  // Each cell's topology and config as a run would build them (the config with the cell's sets).
  const std::filesystem::path dir = testing::sourceDir() + "/configs/experiments";
  std::size_t grids = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const auto& file = entry.path();
    if (file.extension() != ".yaml" || file.stem().string().ends_with("-base")) continue;
    SCOPED_TRACE(file.string());
    const Grid g = loadGrid(file);
    ++grids;
    for (const Cell& cell : expand(g, {})) {
      const CellPlan p = planCell(g, cell, 30000);
      std::vector<std::string> sets = p.sets;
      for (const std::uint32_t id : p.byzantine)
        sets.push_back(fmt::format("byzantine.{}.attack={}", id, p.attack));
      EXPECT_NO_THROW(node::loadConfig(g.config, sets));
    }
  }
  EXPECT_GE(grids, 8u);
}

TEST(Experiment, BadGridsNameTheField) {
  testing::TempDir dir;
  const auto message = [&](const std::string& yaml) {
    try {
      gridFrom(dir, yaml);
    } catch (const GridError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message("topology: t.yaml\ngrid: {attack: [none]}\n"), HasSubstr("config: required"));
  EXPECT_THAT(message("config: c.yaml\ntopology: t.yaml\ngrid: {attack: []}\n"),
              HasSubstr("grid.attack: a non-empty list"));
  EXPECT_THAT(message("config: c.yaml\ntopology: t.yaml\ncolour: red\ngrid: {a: [1]}\n"),
              HasSubstr("colour: unknown field"));
}

TEST(Experiment, CsvHasAttackAndRuleAlwaysAndEveryAxis) {
  testing::TempDir dir;
  const Grid g = gridFrom(dir, "config: c.yaml\ntopology: t.yaml\ngrid: {seed: [1]}\n");
  CellResult r{.cell = expand(g, {})[0],
               .status = CellStatus::kOk,
               .final_acc_mean = 0.5,
               .final_acc_min = 0.25,
               .best_acc_mean = 0.75,
               .consensus_distance = NAN,
               .byzantine_leakage = NAN,
               .detection_rate = NAN,
               .wire_bytes = 1000,
               .compression_ratio = 2,
               .wall_seconds = 3};
  const std::string csv = resultsCsv(g, {r});
  EXPECT_THAT(csv, HasSubstr("attack,rule,seed,status,final_acc_mean,final_acc_min,best_acc_mean"));
  EXPECT_THAT(csv, HasSubstr("none,config,1,ok,0.5,0.25,0.75,,,,1000,2,3,,,\n"));
  r.uplink_bytes = 4e6;
  r.downlink_bytes = 1e6;
  r.downlink_dense_bytes = 5e7;
  EXPECT_THAT(resultsCsv(g, {r}), HasSubstr(",1000,2,3,4e+06,1e+06,5e+07\n"));
  EXPECT_THAT(resultsMarkdown(g, {r}, {}),
              HasSubstr("| none | config | `1` | 4.00 | 1.00 | 50.00 | 49.00 | 50.0x |"));
}

TEST(Experiment, CellRecordsKeepEveryFigureAndTheCurve) {
  testing::TempDir dir;
  const Grid g =
      gridFrom(dir, "config: c.yaml\ntopology: t.yaml\ngrid: {attack: [ipm], rule: [nna]}\n");
  CellResult r{.cell = expand(g, {})[0],
               .status = CellStatus::kFailed,
               .final_acc_mean = 0.5,
               .final_acc_min = 0.25,
               .best_acc_mean = 0.75,
               .consensus_distance = NAN,
               .byzantine_leakage = 0.125,
               .detection_rate = 1,
               .wire_bytes = 1e9,
               .compression_ratio = NAN,
               .wall_seconds = 12.5,
               .rounds = {0, 25, 50},
               .accuracy_mean = {0.1, NAN, 0.5}};
  testing::TempDir files;
  writeCellRecord(files.path() / "result.json", {r, 1});
  const std::string json = cellRecordJson({r, 1});
  EXPECT_THAT(json, HasSubstr("\"consensus_distance\":null"));
  EXPECT_THAT(json, HasSubstr("\"exit_code\":1"));
  const auto record = readCellRecord(r.cell, files.path() / "result.json");
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->exit_code, 1);
  EXPECT_FALSE(readCellRecord(r.cell, files.path() / "missing.json"));
  const std::optional<CellResult> back = record->result;
  EXPECT_EQ(resultsCsv(g, {*back}), resultsCsv(g, {r}));
  EXPECT_EQ(back->rounds, r.rounds);
  ASSERT_EQ(back->accuracy_mean.size(), 3u);
  EXPECT_EQ(back->accuracy_mean[0], 0.1);
  EXPECT_TRUE(std::isnan(back->accuracy_mean[1]));
  // Records without figures (status only), damaged curves, and garbage.
  EXPECT_FALSE(cellRecordFrom(r.cell, "{\"status\": \"ok\", \"wall_seconds\": 3}").has_value());
  EXPECT_FALSE(cellRecordFrom(r.cell, "not json").has_value());
  const auto no_curve_record = cellRecordFrom(
      r.cell,
      "{\"status\": \"ok\", \"final_acc_mean\": 0.8, \"rounds\": [-1], \"accuracy_mean\": [0.5]}");
  ASSERT_TRUE(no_curve_record.has_value());
  EXPECT_EQ(no_curve_record->exit_code, -1);
  const std::optional<CellResult> no_curve = no_curve_record->result;
  EXPECT_EQ(no_curve->final_acc_mean, 0.8);
  EXPECT_TRUE(no_curve->rounds.empty());
  // A chart per attack only where some cell has a curve.
  const auto plots = resultPlots(g, {*no_curve});
  EXPECT_TRUE(std::none_of(plots.begin(), plots.end(),
                           [](const auto& p) { return p.first == "accuracy-ipm.svg"; }));
  const auto with_curve = resultPlots(g, {r});
  EXPECT_TRUE(std::any_of(with_curve.begin(), with_curve.end(),
                          [](const auto& p) { return p.first == "accuracy-ipm.svg"; }));
}

TEST(Experiment, MarkdownHasBreakdownAndPerCellTablesWhereOtherAxesVary) {
  testing::TempDir dir;
  const Grid g =
      gridFrom(dir,
               "config: c.yaml\ntopology: {kind: complete, byzantine_budget: f}\nhonest: 4\n"
               "grid: {attack: [ipm], f: [0, 2], rule: [nna, mean]}\n");
  std::vector<CellResult> results;
  for (const Cell& c : expand(g, {})) {
    // Accuracy falls with f for the mean only: 0.9 - 0.3 f for mean, 0.9 for nna.
    const double f = std::stod(c.value("f"));
    const double acc = c.value("rule") == "mean" ? 0.9 - 0.3 * f : 0.9;
    results.push_back(ranCell(c, acc, acc, 2e6, 1));
  }
  const std::string md = resultsMarkdown(g, results, {});
  EXPECT_THAT(md, HasSubstr("| attack | nna | mean |"));  // rules vary: the pivots stay
  EXPECT_THAT(md, HasSubstr("## Breakdown under ipm: final honest accuracy (rows: rule, columns: "
                            "Byzantine peers f)"));
  EXPECT_THAT(md, HasSubstr("| rule | 0 | 2 |"));
  EXPECT_THAT(md, HasSubstr("| mean | 0.9000 | 0.3000 |"));
  EXPECT_THAT(md, HasSubstr("| nna | 0.9000 | 0.9000 |"));
  EXPECT_THAT(md, HasSubstr("| ipm | mean | `2` | ok | 0.3000 | 0.3000 | — | 2.0 | 1.0x |"));
  // The honest K4 has mu_2 = 4, and every honest peer hears all f attackers: 2b / mu_2 = f / 2,
  // at the bound from f = 2 on; the breakdown plot draws it as a dashed line.
  EXPECT_THAT(md, HasSubstr("Breakdown bound (docs/ALGORITHMS.md §2): 2b / mu_2 = 0.000 at f = "
                            "0, 1.000 at f = 2; no rule has a guarantee from f = 2.0 on."));
  const auto plots = resultPlots(g, results);
  const auto breakdown = std::find_if(plots.begin(), plots.end(),
                                      [](const auto& p) { return p.first == "breakdown-ipm.svg"; });
  ASSERT_NE(breakdown, plots.end());
  EXPECT_THAT(breakdown->second, HasSubstr("breakdown bound 2b = mu_2 (f = 2.0)"));

  // Only a codec varies: no attack x rule average over codecs, one row per cell instead.
  const Grid codecs =
      gridFrom(dir, "config: c.yaml\ntopology: t.yaml\ngrid: {compression.codec: [none, sign]}\n");
  std::vector<CellResult> two;
  for (const Cell& c : expand(codecs, {})) {
    two.push_back(ranCell(c, 0.8, 0.7, 1e6, 32));
  }
  const std::string md2 = resultsMarkdown(codecs, two, {});
  EXPECT_THAT(md2, ::testing::Not(HasSubstr("rows: attack, columns: rule")));
  EXPECT_THAT(md2,
              HasSubstr("| none | config | `sign` | ok | 0.8000 | 0.7000 | — | 1.0 | 32.0x |"));
}

// t.yaml: the path 0-1-2-3-4, every node's budget 1.
void writePathOfFive(const testing::TempDir& dir) {
  std::string path = "byzantine_budget: 1\nnodes:\n";
  for (int i = 0; i < 5; ++i)
    path += fmt::format("  - {{id: {}, host: \"127.0.0.1\", port: {}}}\n", i, 7000 + i);
  dir.write("t.yaml", path + "edges: [[0, 1], [1, 2], [2, 3], [3, 4]]\n");
}

TEST(Experiment, APlacementAxisChoosesWhereTheByzantinePeersSit) {
  testing::TempDir dir;
  // Its middle node lies on the most shortest paths, so centrality takes it; every node's budget
  // of 1 admits it.
  writePathOfFive(dir);
  const Grid g = gridFrom(dir,
                          "config: c.yaml\ntopology: t.yaml\n"
                          "f: 1\ngrid: {placement: [last, centrality, \"random:3\"], seed: [5]}\n");
  const auto cells = expand(g, {});
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(planCell(g, cells[0], 30000).byzantine, std::vector<std::uint32_t>{4});
  const CellPlan central = planCell(g, cells[1], 30000);
  EXPECT_EQ(central.byzantine, std::vector<std::uint32_t>{2});
  // The placement is no config field.
  EXPECT_THAT(central.sets, ::testing::Not(::testing::Contains(HasSubstr("placement"))));
  // random: its own seed when it names one, else the cell's seed axis.
  const auto expected = [&](std::uint64_t seed) {
    return topologies::placeByzantine(central.topology, 1, topologies::PlacementStrategy::kRandom,
                                      seed)
        .byzantine;
  };
  EXPECT_EQ(planCell(g, cells[2], 30000).byzantine, expected(3));
  const Grid seeded = gridFrom(
      dir, "config: c.yaml\ntopology: t.yaml\nf: 1\ngrid: {seed: [5], placement: [random]}\n");
  EXPECT_EQ(planCell(seeded, expand(seeded, {})[0], 30000).byzantine, expected(5));

  // More than the budgets admit (two attackers next to every honest peer of K4, budget 1), an
  // unknown strategy, and explicit ids beside a placement are errors that name the grid.
  const auto error = [&](const std::string& yaml) {
    const Grid bad = gridFrom(dir, yaml);
    try {
      planCell(bad, expand(bad, {})[0], 30000);
    } catch (const GridError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error("config: c.yaml\ntopology: {kind: complete, n: 4, byzantine_budget: 1}\n"
                    "f: 2\ngrid: {placement: [cut]}\n"),
              HasSubstr("placement cut: only 1 of f = 2 Byzantine peers fit"));
  EXPECT_THAT(
      error("config: c.yaml\ntopology: t.yaml\nf: 1\ngrid: {placement: [hubs]}\n"),
      HasSubstr(
          "placement: unknown value 'hubs' (allowed: last, random, centrality, cut, maxspan)"));
  EXPECT_THAT(error("config: c.yaml\ntopology: t.yaml\nbyzantine: [2]\n"
                    "grid: {placement: [cut]}\n"),
              HasSubstr("give f, not byzantine"));
}

TEST(Experiment, APlacedTwoWorldsGraphChoosesItsAttackersAmongItsOwnNodes) {
  testing::TempDir dir;
  // With the last f ids the two worlds get f extra attackers joined to every honest peer; a
  // placement instead turns f of the H + f nodes of two cliques (no extra attackers) Byzantine,
  // each honest peer's budget f.
  const Grid g = gridFrom(dir,
                          "config: c.yaml\nhonest: 10\n"
                          "topology: {kind: two_worlds, links: 2, byzantine_budget: f}\n"
                          "grid: {f: [2], placement: [last, maxspan]}\n");
  const auto cells = expand(g, {});
  ASSERT_EQ(cells.size(), 2u);
  const CellPlan last = planCell(g, cells[0], 30000);
  EXPECT_EQ(last.byzantine, (std::vector<std::uint32_t>{10, 11}));
  EXPECT_EQ(last.topology.degree(10), 10u);
  const CellPlan placed = planCell(g, cells[1], 30000);
  ASSERT_EQ(placed.topology.size(), 12u);
  // Two cliques of 6, two links per node across: every node has 5 + 2 neighbours.
  for (const auto& node : placed.topology.nodes()) EXPECT_EQ(placed.topology.degree(node.id), 7u);
  EXPECT_EQ(placed.byzantine, topologies::placeByzantine(placed.topology, 2,
                                                         topologies::PlacementStrategy::kMaxSpan, 0)
                                  .byzantine);
  EXPECT_EQ(placed.byzantine.size(), 2u);
}

TEST(Experiment, MarkdownSummarizesEachSettingOverItsSeeds) {
  testing::TempDir dir;
  const Grid g = gridFrom(dir,
                          "config: c.yaml\ntopology: t.yaml\ngrid: {seed: [1, 2, 3], attack: "
                          "[ipm], rule: [nna, mean]}\n");
  std::vector<CellResult> results;
  for (const Cell& c : expand(g, {})) {
    // nna: 0.8, 0.9, 0.7 on seeds 1, 2, 3 (mean 0.8, sd 0.1, SE 0.1 / sqrt 3); mean: seed 2
    // diverged (no figure), 0.5 and 0.4 on the others.
    const int seed = std::stoi(c.value("seed"));
    const bool nna = c.value("rule") == "nna";
    const double acc =
        nna ? std::array{0.8, 0.9, 0.7}[seed - 1] : std::array{0.5, double(NAN), 0.4}[seed - 1];
    results.push_back(ranCell(c, acc, acc - 0.05, 1e6, 1));
    if (!std::isfinite(acc)) results.back().status = CellStatus::kFailed;
  }
  const std::string md = resultsMarkdown(g, results, {});
  EXPECT_THAT(md, HasSubstr("| attack | rule | seeds | mean ± SE | worst seed | worst peer |"));
  EXPECT_THAT(md, HasSubstr("| ipm | nna | 3 | 0.8000 ± 0.0577 | 0.7000 (seed 3) | 0.6500 |"));
  EXPECT_THAT(md, HasSubstr("| ipm | mean | 2 (no figure: seed 2) | 0.4500 ± 0.0500 | 0.4000 "
                            "(seed 3) | 0.3500 |"));
  // One seed: no such table.
  const Grid one = gridFrom(dir, "config: c.yaml\ntopology: t.yaml\ngrid: {seed: [1]}\n");
  EXPECT_THAT(resultsMarkdown(one, {}, {}), ::testing::Not(HasSubstr("Over seeds")));
}

TEST(Experiment, MarkdownTablesEachPlacementBesideTheRandomOnesMean) {
  testing::TempDir dir;
  // One attacker on the path: centrality takes the middle node 2.
  writePathOfFive(dir);
  const Grid g = gridFrom(dir,
                          "config: c.yaml\ntopology: t.yaml\nf: 1\n"
                          "grid: {placement: [\"random:1\", \"random:2\", centrality], attack: "
                          "[alie], rule: [nna]}\n");
  std::vector<CellResult> results;
  for (const Cell& c : expand(g, {})) {
    const std::string p = c.value("placement");
    const double acc = p == "random:1" ? 0.8 : p == "random:2" ? 0.7 : 0.5;
    results.push_back(ranCell(c, acc, acc - 0.1, 1e6, 1));
  }
  const std::string md = resultsMarkdown(g, results, {});
  // The middle node splits the path: mu_2 = 0, beyond the bound.
  EXPECT_THAT(md, HasSubstr("| centrality | 2 | 0.000 | 1 | inf |"));
  EXPECT_THAT(md, HasSubstr("## Placement under alie: final honest accuracy"));
  EXPECT_THAT(md, HasSubstr("| random:2 | 0.7000 (0.6000) |"));
  EXPECT_THAT(md, HasSubstr("| centrality | 0.5000 (0.4000) |"));
  EXPECT_THAT(md, HasSubstr("| random, mean of 2 | 0.7500 (0.6500) |"));
}

}  // namespace
}  // namespace phalanx::tools
