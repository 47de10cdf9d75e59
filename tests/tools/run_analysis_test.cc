// What launch and monitor compute, by hand: the summary's figures from per-round logs,
// consensus distance, Prometheus parsing, the launch plan (local and over ssh), the report.
#include "tools/run_analysis.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <tuple>

#include "node/metrics.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tools/launch.h"
#include "tools/monitor.h"
#include "tools/report.h"

namespace phalanx::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

node::RoundRecord point(std::uint64_t round, std::vector<std::uint32_t> mixed,
                        std::vector<std::uint32_t> excluded,
                        std::optional<double> accuracy = std::nullopt, double seconds = 0.5) {
  return {.round = round,
          .test_accuracy = accuracy,
          .bytes_sent_total = 100 * (round + 1),
          .dense_bytes_total = 1000 * (round + 1),
          .mixed = std::move(mixed),
          .excluded = std::move(excluded),
          .round_seconds = seconds};
}

TEST(RunAnalysis, SummaryFiguresByHand) {
  // Honest 0 and 1, Byzantine 2, peer 3 crashed after one round.
  std::vector<PeerHistory> peers{
      {.id = 0, .rounds = {point(0, {1, 2}, {2}), point(1, {1, 2}, {1}, 0.8)}},
      {.id = 1, .rounds = {point(0, {0, 2}, {2}), point(1, {0, 2}, {2}, 0.6)}},
      {.id = 2, .byzantine = true, .rounds = {point(0, {0, 1}, {})}},
      {.id = 3, .rounds = {point(0, {0}, {}, 0.1)}},
  };
  const std::vector<MonitorSample> samples{{.seconds = 1, .round = 1, .consensus_distance = 0.25},
                                           {.seconds = 2, .round = 2, .consensus_distance = NAN}};
  const RunSummary s = summarize(peers, samples, {3});
  // Accuracy: the survivors' last evaluations (0.8, 0.6); peer 3's stale 0.1 left out.
  EXPECT_DOUBLE_EQ(s.honest_accuracy_mean, 0.7);
  EXPECT_DOUBLE_EQ(s.honest_accuracy_min, 0.6);
  EXPECT_DOUBLE_EQ(s.honest_accuracy_max, 0.8);
  // Byzantine vector mixed in 4 honest peer-rounds (peer 3 never mixed it), excluded in 3.
  EXPECT_DOUBLE_EQ(s.byzantine_leakage, 0.25);
  EXPECT_DOUBLE_EQ(s.detection_rate, 0.75);
  // Honest vectors mixed in 5 honest peer-rounds, one of them left out (peer 0 dropped 1).
  EXPECT_DOUBLE_EQ(s.honest_excluded, 0.2);
  // Σ dense / Σ sent over honest peers' last rounds: (2000 + 2000 + 1000) / (200 + 200 + 100).
  EXPECT_DOUBLE_EQ(s.compression_ratio, 10.0);
  EXPECT_DOUBLE_EQ(s.consensus_distance, 0.25);  // the last finite sample
  EXPECT_EQ(s.rounds, 2u);
  EXPECT_EQ(s.crashed, std::vector<std::uint32_t>{3});
  EXPECT_EQ(s.byzantine, std::vector<std::uint32_t>{2});
  EXPECT_DOUBLE_EQ(s.exclusion_share.at(0).at(2), 0.5);
  EXPECT_DOUBLE_EQ(s.exclusion_share.at(1).at(2), 1.0);
  ASSERT_EQ(s.series.detection.size(), 2u);
  EXPECT_DOUBLE_EQ(s.series.detection[0], 1.0);  // round 0: both honest peers excluded 2
  EXPECT_DOUBLE_EQ(s.series.detection[1], 0.5);
  // Five honest peer-rounds of 0.5 s (the Byzantine peer's round is not counted).
  EXPECT_DOUBLE_EQ(s.round_seconds_p50, 0.5);
  EXPECT_DOUBLE_EQ(s.round_seconds_max, 0.5);
  const std::string json = summaryJson(s);
  for (const char* key :
       {"honest_accuracy_mean", "honest_accuracy_min", "consensus_distance", "byzantine_leakage",
        "detection_rate", "honest_excluded", "compression_ratio", "rounds", "crashed"}) {
    EXPECT_THAT(json, HasSubstr(std::string("\"") + key + "\"")) << key;
  }
}

TEST(RunAnalysis, RoundTimePercentilesAreNearestRankOverHonestPeerRounds) {
  // 100 honest rounds of 1..100 ms over two peers, and a Byzantine peer's 10 s round.
  std::vector<PeerHistory> peers{{.id = 0}, {.id = 1}, {.id = 2, .byzantine = true}};
  for (int k = 1; k <= 100; ++k) {
    peers[std::size_t(k % 2)].rounds.push_back(point(std::uint64_t(k), {}, {}, {}, k / 1000.0));
  }
  peers[2].rounds.push_back(point(0, {}, {}, {}, 10.0));
  const RunSummary s = summarize(peers, {}, {});
  EXPECT_DOUBLE_EQ(s.round_seconds_p50, 0.050);  // the 50th of 100
  EXPECT_DOUBLE_EQ(s.round_seconds_p99, 0.099);  // the 99th
  EXPECT_DOUBLE_EQ(s.round_seconds_max, 0.100);
  const RunSummary none = summarize({}, {}, {});
  EXPECT_TRUE(std::isnan(none.round_seconds_p99));
  EXPECT_THAT(summaryJson(none), HasSubstr("\"round_seconds_p99\": null"));
}

TEST(RunAnalysis, SummaryRoundTripsThroughItsReader) {
  RunSummary s;
  s.honest_accuracy_mean = 0.875;
  s.honest_accuracy_min = 0.75;
  s.honest_accuracy_max = 1.0;
  s.consensus_distance = std::nan("");
  s.byzantine_leakage = 0.125;
  s.detection_rate = 0.5;
  s.compression_ratio = 91;
  s.round_seconds_mean = 0.25;
  s.round_seconds_p50 = 0.125;
  s.round_seconds_p99 = 0.75;
  s.round_seconds_max = 1.5;
  s.uplink_bytes = 4e6;
  s.downlink_bytes = 1e6;
  s.downlink_dense_bytes = 8e7;
  s.rounds = 300;
  s.crashed = {4};
  s.diverged = {5};
  s.byzantine = {8, 9};
  s.honest_metrics["perplexity"] = {.min = 11.5, .mean = 12, .max = 12.5};
  const auto back = summaryFromJson(summaryJson(s));
  ASSERT_TRUE(back);
  EXPECT_EQ(summaryJson(*back), summaryJson(s));
  EXPECT_TRUE(std::isnan(back->consensus_distance));
  EXPECT_FALSE(summaryFromJson("[]"));
  EXPECT_FALSE(summaryFromJson("{\"rounds\": 3}"));
  testing::TempDir dir;
  EXPECT_FALSE(readSummary(dir.path()));
  std::ofstream(dir.path() / "summary.json") << summaryJson(s);
  ASSERT_TRUE(readSummary(dir.path()));
  EXPECT_EQ(readSummary(dir.path())->byzantine, (std::vector<std::uint32_t>{8, 9}));
}

TEST(RunAnalysis, AScriptsOwnMetricsAreSummarizedFromEachHonestPeersLastValue) {
  // A language model's peers: test_loss and perplexity, no accuracy. Peer 2 is Byzantine,
  // peer 3 crashed (its stale values left out); peer 1 reported perplexity only once.
  auto evaluated = [](std::uint64_t round, double loss, std::optional<double> perplexity) {
    node::RoundRecord r = point(round, {}, {});
    r.test_loss = loss;
    if (perplexity) r.test_metrics = {{"perplexity", *perplexity}};
    return r;
  };
  std::vector<PeerHistory> peers{
      {.id = 0, .rounds = {evaluated(0, 3.0, 20.0), evaluated(1, 2.0, 7.5)}},
      {.id = 1, .rounds = {evaluated(0, 2.5, 12.5), evaluated(1, 2.25, std::nullopt)}},
      {.id = 2, .byzantine = true, .rounds = {evaluated(1, 9.0, 900.0)}},
      {.id = 3, .rounds = {evaluated(0, 9.0, 800.0)}},
  };
  const RunSummary s = summarize(peers, {}, {3});
  EXPECT_TRUE(std::isnan(s.honest_accuracy_mean));
  ASSERT_EQ(s.honest_metrics.size(), 2u);
  EXPECT_DOUBLE_EQ(s.honest_metrics.at("perplexity").min, 7.5);
  EXPECT_DOUBLE_EQ(s.honest_metrics.at("perplexity").mean, 10.0);
  EXPECT_DOUBLE_EQ(s.honest_metrics.at("perplexity").max, 12.5);
  EXPECT_DOUBLE_EQ(s.honest_metrics.at("test_loss").mean, 2.125);
  EXPECT_THAT(summaryJson(s), HasSubstr("\"perplexity\": {"));
  EXPECT_THAT(summaryTiles(s, nullptr), HasSubstr("honest perplexity (mean)"));
  // Runs without such metrics write no honest_metrics at all.
  EXPECT_THAT(summaryJson(summarize({}, {}, {})), Not(HasSubstr("honest_metrics")));
}

TEST(RunAnalysis, HubTrafficByHand) {
  // A hub (0) and two honest leaves (1, 2) and a Byzantine one (3): uplink is what the honest
  // leaves sent, downlink what the hub sent, the dense downlink what its broadcasts would weigh.
  const auto last = [](std::uint64_t up, std::uint64_t down, std::uint64_t dense) {
    node::RoundRecord r = point(9, {}, {}, 0.5);
    r.bytes_uplink_total = up;
    r.bytes_downlink_total = down;
    r.bytes_sent_total = up + down;
    r.dense_bytes_total = dense;
    return r;
  };
  std::vector<PeerHistory> peers{{.id = 0, .rounds = {last(0, 3000, 120000)}},
                                 {.id = 1, .rounds = {last(700, 0, 40000)}},
                                 {.id = 2, .rounds = {last(500, 0, 40000)}},
                                 {.id = 3, .byzantine = true, .rounds = {last(9999, 0, 40000)}}};
  const RunSummary s = summarize(peers, {}, {});
  EXPECT_DOUBLE_EQ(s.uplink_bytes, 1200);
  EXPECT_DOUBLE_EQ(s.downlink_bytes, 3000);
  EXPECT_DOUBLE_EQ(s.downlink_dense_bytes, 120000);
  EXPECT_THAT(summaryTiles(s, nullptr), HasSubstr("0.00 MB up · 0.00 MB down"));
  EXPECT_THAT(summaryTiles(s, nullptr), HasSubstr("40.0× fewer than dense"));
  // Not a hub run: nothing measured.
  const RunSummary gossip =
      summarize(std::vector<PeerHistory>{{.id = 0, .rounds = {point(0, {}, {})}}}, {}, {});
  EXPECT_TRUE(std::isnan(gossip.downlink_bytes));
  EXPECT_THAT(summaryJson(gossip), HasSubstr("\"downlink_bytes\": null"));
  EXPECT_THAT(summaryTiles(gossip, nullptr), Not(HasSubstr("hub traffic")));
}

TEST(RunAnalysis, AccuracyOverTimeAndLocalStepsByHand) {
  // Two honest peers evaluated at rounds 0 and 1: the time axis is each peer's summed round
  // seconds by then, averaged; an outer run's records say the local steps taken by then.
  const auto rec = [](std::uint64_t round, double seconds, std::uint64_t steps) {
    node::RoundRecord r = point(round, {}, {}, 0.5, seconds);
    r.local_steps = steps;
    return r;
  };
  const std::vector<PeerHistory> outer{{.id = 0, .rounds = {rec(0, 1.0, 10), rec(1, 2.0, 20)}},
                                       {.id = 1, .rounds = {rec(0, 3.0, 10), rec(1, 0.5, 20)}}};
  const RunSummary s = summarize(outer, {}, {});
  EXPECT_EQ(s.series.seconds, (std::vector<double>{2.0, 3.25}));
  EXPECT_EQ(s.series.local_steps, (std::vector<std::uint64_t>{10, 20}));
  const auto charts = reportCharts(s, {}, nullptr);
  EXPECT_THAT(charts[0].svg, HasSubstr("local steps"));
  ASSERT_EQ(charts[1].name, "accuracy-over-time");
  EXPECT_THAT(charts[1].svg, HasSubstr("seconds (summed round times"));
  // Per-step runs keep rounds on the axis.
  const RunSummary plain =
      summarize(std::vector<PeerHistory>{{.id = 0, .rounds = {point(0, {}, {}, 0.5)}}}, {}, {});
  EXPECT_TRUE(plain.series.local_steps.empty());
  EXPECT_THAT(reportCharts(plain, {}, nullptr)[0].svg, Not(HasSubstr("local steps")));
}

TEST(RunAnalysis, NothingMeasuredIsNullNotZero) {
  const RunSummary s = summarize({}, {}, {});
  const std::string json = summaryJson(s);
  EXPECT_THAT(json, HasSubstr("\"detection_rate\": null"));
  EXPECT_THAT(json, HasSubstr("\"honest_accuracy_mean\": null"));
}

TEST(RunAnalysis, ConsensusDistanceByHand) {
  // Mean (1, 1); squared distances 2 and 2: Ξ² = 2.
  const std::vector<std::vector<float>> models{{0, 0}, {2, 2}};
  EXPECT_DOUBLE_EQ(consensusDistance(models), 2.0);
  EXPECT_DOUBLE_EQ(consensusDistance(std::vector<std::vector<float>>{{5, 5}}), 0.0);
  EXPECT_THROW(consensusDistance(std::vector<std::vector<float>>{{1}, {1, 2}}),
               std::invalid_argument);
}

TEST(RunAnalysis, PeerHistorySkipsBrokenLines) {
  testing::TempDir dir;
  const auto file = dir.write(
      "node-4.jsonl",
      "{\"node\": 4, \"round\": 0, \"mixed\": [1,2], \"excluded\": [2], \"bytes_sent_total\": 7}\n"
      "{\"node\": 4, \"round\": 1, \"test_accuracy\": 0.5, \"mixed\": [], \"exc");
  const PeerHistory h = readPeerHistory(file, 4, false);
  ASSERT_EQ(h.rounds.size(), 1u);
  EXPECT_EQ(h.malformed_lines, 1u);
  EXPECT_EQ(h.rounds[0].excluded, std::vector<std::uint32_t>{2});
  EXPECT_EQ(h.rounds[0].bytes_sent_total, 7u);
  EXPECT_TRUE(readPeerHistory(dir.path() / "absent.jsonl", 1, false).rounds.empty());
}

TEST(RunAnalysis, RoundsLoggedAgainAfterARestartSupersedeTheLostOnes) {
  testing::TempDir dir;
  std::string text;
  const auto line = [&text](int round, double seconds) {
    text += fmt::format("{{\"node\": 2, \"round\": {}, \"round_seconds\": {}}}\n", round, seconds);
  };
  for (int r = 0; r <= 4; ++r) line(r, 1.0);  // killed after round 4 ...
  for (int r = 2; r <= 6; ++r) line(r, 2.0);  // ... resumed from its round-2 checkpoint
  const PeerHistory h = readPeerHistory(dir.write("node-2.jsonl", text), 2, false);
  ASSERT_EQ(h.rounds.size(), 7u);
  for (std::size_t k = 0; k < h.rounds.size(); ++k) {
    EXPECT_EQ(h.rounds[k].round, k);
    EXPECT_DOUBLE_EQ(h.rounds[k].round_seconds, k < 2 ? 1.0 : 2.0);
  }
  EXPECT_EQ(h.superseded_rounds, 3u);
}

TEST(RunAnalysis, MonitorSamplesRoundTrip) {
  testing::TempDir dir;
  const MonitorSample a{.seconds = 1.5,
                        .round = 7,
                        .local_steps = 70,
                        .consensus_distance = 0.125,
                        .accuracy_mean = 0.5};
  const auto file = dir.write("monitor.jsonl", monitorSampleJson(a) + "\nnot json\n");
  const auto back = readMonitorSamples(file);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].round, 7u);
  EXPECT_EQ(back[0].local_steps, 70u);
  EXPECT_DOUBLE_EQ(back[0].consensus_distance, 0.125);
  EXPECT_DOUBLE_EQ(back[0].accuracy_mean, 0.5);
  EXPECT_TRUE(std::isnan(back[0].accuracy_min));
}

TEST(RunAnalysis, IdLists) {
  EXPECT_EQ(parseIdList("8,9,3"), (std::set<std::uint32_t>{3, 8, 9}));
  EXPECT_TRUE(parseIdList("").empty());
  EXPECT_THROW(parseIdList("1,x"), std::invalid_argument);
  EXPECT_THROW(parseIdList("1,,2"), std::invalid_argument);
}

TEST(Monitor, ParsesPrometheusText) {
  const auto samples = parsePrometheus(
      "# HELP phalanx_round Rounds.\n# TYPE phalanx_round gauge\nphalanx_round{node=\"3\"} 42\n"
      "phalanx_peer_excluded_total{node=\"3\",peer=\"9\"} 17\nphalanx_test_accuracy{node=\"3\"} "
      "NaN\n"
      "garbage line\nplain_metric 2.5\n");
  ASSERT_EQ(samples.size(), 4u);
  EXPECT_EQ(samples[0].name, "phalanx_round");
  EXPECT_EQ(samples[0].labels.at("node"), "3");
  EXPECT_DOUBLE_EQ(samples[0].value, 42);
  EXPECT_EQ(samples[1].labels.at("peer"), "9");
  EXPECT_TRUE(std::isnan(samples[2].value));
  EXPECT_EQ(samples[3].name, "plain_metric");
}

TEST(Monitor, OuterRunsShowLocalStepsAndTheReportPlotsAgainstThem) {
  // Two honest outer peers (H = 10) at rounds 4 and 5, a Byzantine one far ahead, one down.
  const std::vector<PeerView> views{
      {.id = 0, .up = true, .round = 4, .local_steps = 40, .test_accuracy = 0.5},
      {.id = 1, .up = true, .round = 5, .local_steps = 50, .test_accuracy = 0.7},
      {.id = 2, .byzantine = true, .up = true, .round = 99, .local_steps = 990},
      {.id = 3, .up = false},
  };
  const MonitorFigures f = figuresOf(views, {2});
  EXPECT_EQ(f.round_min, 4u);
  EXPECT_EQ(f.round_max, 5u);
  EXPECT_EQ(f.local_steps_min, 40u);
  EXPECT_EQ(f.local_steps_max, 50u);
  EXPECT_DOUBLE_EQ(f.accuracy_mean, 0.6);
  EXPECT_EQ(f.down, std::vector<std::uint32_t>{3});

  const std::vector<MonitorSample> outer{
      {.seconds = 1, .round = 2, .local_steps = 20, .accuracy_mean = 0.4},
      {.seconds = 2, .round = 4, .local_steps = 40, .accuracy_mean = 0.6}};
  const RunSummary s = summarizeLive(f, outer, {}, {2});
  EXPECT_EQ(s.series.rounds, (std::vector<std::uint64_t>{2, 4}));
  EXPECT_EQ(s.series.local_steps, (std::vector<std::uint64_t>{20, 40}));
  // One local step per round (or a node that does not say): plotted against rounds.
  const std::vector<MonitorSample> per_step{
      {.seconds = 1, .round = 2, .local_steps = 2, .accuracy_mean = 0.4}};
  EXPECT_TRUE(summarizeLive(f, per_step, {}, {}).series.local_steps.empty());
}

TEST(Launch, ScriptPeersGetTorchsRankVariablesAndDevicesRoundRobinPerHost) {
  // Three peers on one host, one on another: ranks by topology order, local ranks per host.
  const topologies::Topology t({{.id = 0, .host = "127.0.0.1", .port = 9000},
                                {.id = 1, .host = "10.1.2.3", .port = 9000},
                                {.id = 2, .host = "127.0.0.1", .port = 9001},
                                {.id = 3, .host = "127.0.0.1", .port = 9002}},
                               {{0, 1}, {1, 2}, {2, 3}}, 0);
  const LaunchPlan plan = planLaunch({.topology_file = "/t.yaml",
                                      .config_file = "/c.yaml",
                                      .out = "/out",
                                      .binary = "/opt/phalanx",
                                      .script = {"/train.py"},
                                      .gpus = gpuList("0,1", nullptr, 0)},
                                     t, {"127.0.0.1"});
  const auto has = [](const LaunchPeer& p, const std::string& word) {
    return std::find(p.argv.begin(), p.argv.end(), word) != p.argv.end() ||
           (!p.argv.empty() && p.argv.back().find(word) != std::string::npos);
  };
  for (const auto& [index, rank, local, local_size, device] :
       std::vector<std::tuple<int, int, int, int, int>>{
           {0, 0, 0, 3, 0}, {1, 1, 0, 1, 0}, {2, 2, 1, 3, 1}, {3, 3, 2, 3, 0}}) {
    const LaunchPeer& p = plan.peers[std::size_t(index)];
    EXPECT_TRUE(has(p, fmt::format("RANK={}", rank))) << index;
    EXPECT_TRUE(has(p, "WORLD_SIZE=4")) << index;
    EXPECT_TRUE(has(p, fmt::format("LOCAL_RANK={}", local))) << index;
    EXPECT_TRUE(has(p, fmt::format("LOCAL_WORLD_SIZE={}", local_size))) << index;
    EXPECT_TRUE(has(p, fmt::format("CUDA_VISIBLE_DEVICES={}", device))) << index;
  }
  // --gpus: auto follows launch's own CUDA_VISIBLE_DEVICES, else what nvidia-smi found.
  EXPECT_EQ(gpuList("auto", "2,3", 8), (std::vector<std::string>{"2", "3"}));
  EXPECT_EQ(gpuList("auto", "", 2), (std::vector<std::string>{"0", "1"}));
  EXPECT_TRUE(gpuList("auto", nullptr, 0).empty());
  EXPECT_TRUE(gpuList("none", "0", 4).empty());
  EXPECT_EQ(gpuList("GPU-a1,GPU-b2", nullptr, 0), (std::vector<std::string>{"GPU-a1", "GPU-b2"}));
  EXPECT_THROW(gpuList("0,,1", nullptr, 0), std::invalid_argument);
  EXPECT_THROW(gpuList("0, 1", nullptr, 0), std::invalid_argument);
  // No devices: the variable is left as the peers inherit it.
  const LaunchPlan plain = planLaunch({.topology_file = "/t.yaml",
                                       .config_file = "/c.yaml",
                                       .out = "/out",
                                       .binary = "/opt/phalanx",
                                       .script = {"/train.py"}},
                                      t, {"127.0.0.1"});
  EXPECT_FALSE(has(plain.peers[0], "CUDA_VISIBLE_DEVICES=0"));
}

TEST(Launch, PlansLocalPeersAndSshForOthers) {
  const topologies::Topology t({{.id = 0, .host = "127.0.0.1", .port = 9000, .metrics_port = 9100},
                                {.id = 1, .host = "10.1.2.3", .port = 9000, .metrics_port = 9100}},
                               {{0, 1}}, 0);
  const LaunchPlan plan = planLaunch({.topology_file = "/runs/t.yaml",
                                      .config_file = "/runs/c.yaml",
                                      .out = "/runs/out dir",
                                      .binary = "/opt/phalanx",
                                      .remote_binary = "/usr/bin/phalanx",
                                      .rounds = 50,
                                      .sets = {"mixing.rule=mean"},
                                      .byzantine = {1},
                                      .attack = "alie"},
                                     t, {"127.0.0.1", "localhost"});
  ASSERT_EQ(plan.peers.size(), 2u);
  EXPECT_TRUE(plan.peers[0].local);
  EXPECT_EQ(plan.peers[0].shellCommand(),
            "/opt/phalanx node --topology /runs/t.yaml --config /runs/c.yaml --id 0 --out "
            "'/runs/out dir' "
            "--rounds 50 --set mixing.rule=mean --set byzantine.1.attack=alie");
  EXPECT_FALSE(plan.peers[1].local);
  ASSERT_EQ(plan.peers[1].argv.size(), 4u);
  EXPECT_EQ(plan.peers[1].argv[0], "ssh");
  EXPECT_EQ(plan.peers[1].argv[1], "-tt");
  EXPECT_EQ(plan.peers[1].argv[2], "10.1.2.3");
  EXPECT_EQ(plan.peers[1].argv[3],
            "mkdir -p '/runs/out dir' && echo $$ > '/runs/out dir/node-1.pid' && { stty -onlcr "
            "2>/dev/null; exec /usr/bin/phalanx node --topology /runs/t.yaml --config /runs/c.yaml "
            "--id 1 --out '/runs/out dir' --rounds 50 --set mixing.rule=mean --set "
            "byzantine.1.attack=alie; }");
  EXPECT_EQ(plan.peers[1].remote.ssh, (std::vector<std::string>{"ssh", "10.1.2.3"}));
  EXPECT_EQ(plan.peers[1].remote.pid_file, "/runs/out dir/node-1.pid");
  // Another run folder there, and an ssh with options: the copies' paths, the words split.
  const LaunchPlan apart = planLaunch({.topology_file = "/runs/t.yaml",
                                       .config_file = "/runs/c.yaml",
                                       .out = "/runs/o",
                                       .binary = "/opt/phalanx",
                                       .ssh = "ssh  -p 2222 -i /k",
                                       .remote_out = "/far/o"},
                                      t, {"127.0.0.1"});
  EXPECT_EQ(apart.peers[1].remote.ssh,
            (std::vector<std::string>{"ssh", "-p", "2222", "-i", "/k", "10.1.2.3"}));
  EXPECT_THAT(apart.peers[1].argv.back(),
              HasSubstr("exec /opt/phalanx node --topology /far/o/topology.yaml --config "
                        "/far/o/config.yaml --id 1 --out /far/o;"));
  EXPECT_EQ(apart.peers[1].out, "/far/o");
  EXPECT_THAT(apart.peers[0].shellCommand(), HasSubstr("--topology /runs/t.yaml"));
  EXPECT_THAT(plan.command_line, HasSubstr("--byzantine 1 --attack alie"));
  EXPECT_EQ(shellQuote("it's"), "'it'\\''s'");
  const LaunchPlan wrapped = planLaunch({.topology_file = "t.yaml",
                                         .config_file = "c.yaml",
                                         .out = "o",
                                         .binary = "phalanx",
                                         .wrap = "ip netns exec phx{id}"},
                                        t, {"127.0.0.1"});
  EXPECT_TRUE(wrapped.peers[1].local);
  EXPECT_EQ(wrapped.peers[1].shellCommand(),
            "ip netns exec phx1 phalanx node --topology t.yaml --config c.yaml --id 1 --out o");
}

TEST(Launch, PidsRoundTripAndGarbageIsSkipped) {
  testing::TempDir dir;
  EXPECT_TRUE(readPids(dir.path()).empty());  // no file
  writePids(dir.path(), {{3, 4711}, {12, 99}});
  EXPECT_EQ(readPids(dir.path()), (std::map<std::uint32_t, pid_t>{{3, 4711}, {12, 99}}));
  std::ofstream(dir.path() / "pids.json") << R"({"3": 4711, "x": 5, "4": -1, "5": "9", "6": 7})";
  EXPECT_EQ(readPids(dir.path()), (std::map<std::uint32_t, pid_t>{{3, 4711}, {6, 7}}));
  std::ofstream(dir.path() / "pids.json") << "[1, 2]";
  EXPECT_TRUE(readPids(dir.path()).empty());
  // Remote peers: how to reach them, beside the local pids; neither reader sees the other's.
  const RemoteProcess far{.ssh = {"ssh", "-p", "2222", "10.0.0.5"}, .pid_file = "/o/node-5.pid"};
  writePids(dir.path(), {{3, 4711}}, {{5, far}});
  EXPECT_EQ(readPids(dir.path()), (std::map<std::uint32_t, pid_t>{{3, 4711}}));
  EXPECT_EQ(readRemotePids(dir.path()), (std::map<std::uint32_t, RemoteProcess>{{5, far}}));
  std::ofstream(dir.path() / "pids.json")
      << R"({"5": {"ssh": [], "pid_file": "p"}, "6": {"ssh": ["s", 1], "pid_file": "p"},)"
      << R"( "7": {"ssh": ["s"]}, "8": {"ssh": ["s", "h"], "pid_file": "p"}})";
  EXPECT_EQ(readRemotePids(dir.path()),
            (std::map<std::uint32_t, RemoteProcess>{{8, {.ssh = {"s", "h"}, .pid_file = "p"}}}));
}

TEST(Report, IsSelfContainedWithEveryPlotAndEscapesTheConfig) {
  std::vector<PeerHistory> peers{
      {.id = 0, .rounds = {point(0, {1}, {1}, 0.5), point(1, {1}, {}, 0.7)}},
      {.id = 1, .byzantine = true, .rounds = {point(0, {0}, {})}}};
  const std::vector<MonitorSample> samples{{.seconds = 1, .round = 1, .consensus_distance = 0.5}};
  const RunSummary s = summarize(peers, samples, {});
  const std::string html =
      reportHtml(s, samples,
                 {.title = "t", .config_text = "rule: <nna> & co", .summary_json = summaryJson(s)});
  EXPECT_THAT(html, HasSubstr("rule: &lt;nna&gt; &amp; co"));
  EXPECT_EQ(reportCharts(s, samples).size(), 5u);
  std::size_t svgs = 0;
  for (std::size_t at = 0; (at = html.find("<svg", at)) != std::string::npos; ++at) ++svgs;
  EXPECT_EQ(svgs, 5u);
  EXPECT_THAT(html, HasSubstr("Exclusions per peer"));
  EXPECT_THAT(html, ::testing::Not(HasSubstr("<script")));
  EXPECT_THAT(html, ::testing::Not(HasSubstr("http://cdn")));
}

TEST(Report, TicksAreRoundStepsThatCoverTheRange) {
  for (const auto& [lo, hi] : std::vector<std::pair<double, double>>{
           {0, 1}, {0.0123, 0.9}, {0, 299}, {-3.5, 17}, {1e-4, 3e-4}, {5, 5}}) {
    const auto ticks = niceTicks(lo, hi);
    ASSERT_GE(ticks.size(), 2u) << lo << ".." << hi;
    EXPECT_LE(ticks.front(), lo + 1e-12);
    const double top = hi > lo ? hi : lo + 1;  // an empty range is widened by one
    EXPECT_GE(ticks.back(), top - 1e-9 * std::abs(top));
    EXPECT_LE(ticks.size(), 11u);
    const double step = ticks[1] - ticks[0];
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step)));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 ||
                std::abs(mantissa - 5) < 1e-6)
        << step;
    for (std::size_t k = 1; k < ticks.size(); ++k) EXPECT_NEAR(ticks[k] - ticks[k - 1], step, 1e-9);
  }
  const auto unit = niceTicks(0, 1);
  ASSERT_EQ(unit.size(), 6u);  // 0, 0.2, ..., 1
  for (std::size_t k = 0; k < unit.size(); ++k) EXPECT_NEAR(unit[k], 0.2 * double(k), 1e-12);
}

TEST(Report, BytesAgainstDenseSayMoreWhenThereAreMore) {
  EXPECT_EQ(versusDense(27.53), "27.5x fewer");
  EXPECT_EQ(versusDense(1.05), "4.8 % fewer");
  EXPECT_EQ(versusDense(1 / 1.02), "2.0 % more");  // uncompressed: headers and statements
  EXPECT_EQ(versusDense(std::nan("")), "-");
  EXPECT_EQ(versusDense(0), "-");
}

TEST(Report, BoundedAxesZoomToTheDataWithinTheirBounds) {
  // Accuracies between 0.982 and 0.991: an axis of their own, not a sliver of [0, 1].
  Chart c{.title = "a",
          .x_label = "round",
          .y_label = "accuracy",
          .series = {{"mean", "#000", {0, 10}, {0.982, 0.991}}},
          .y_bounds = std::pair{0.0, 1.0}};
  std::string svg = svgChart(c);
  EXPECT_THAT(svg, HasSubstr("text-anchor='end'>0.982</text>"));
  EXPECT_THAT(svg, ::testing::Not(HasSubstr("text-anchor='end'>0</text>")));
  // Never past the bounds: a share near 1 does not get a tick at 1.2.
  c.series = {{"share", "#000", {0, 10}, {0.1, 0.95}}};
  svg = svgChart(c);
  EXPECT_THAT(svg, HasSubstr("text-anchor='end'>1</text>"));
  EXPECT_THAT(svg, ::testing::Not(HasSubstr(">1.2</text>")));
  // One evaluation: one round tick in the middle, not 199 199 199 200 200 200.
  c.series = {{"mean", "#000", {199}, {0.8}}};
  svg = svgChart(c);
  EXPECT_THAT(svg, HasSubstr("text-anchor='middle'>199</text>"));
  EXPECT_THAT(svg, HasSubstr("<circle"));
  const std::string tick = "text-anchor='middle'>199</text>";
  EXPECT_EQ(svg.find(tick), svg.rfind(tick));  // once
  // The legend is above the plot, where no data is.
  EXPECT_THAT(svg, HasSubstr("<rect x='80' y='30' width='12'"));
}

TEST(Report, SummaryTilesShowTheFiguresAndTheCleanBaseline) {
  std::vector<PeerHistory> peers{
      {.id = 0, .rounds = {point(0, {1}, {1}, 0.5), point(1, {1}, {}, 0.7)}},
      {.id = 1, .byzantine = true, .rounds = {point(0, {0}, {})}}};
  const RunSummary attacked = summarize(peers, {}, {2});
  std::vector<PeerHistory> clean_peers{
      {.id = 0, .rounds = {point(0, {1}, {}, 0.6), point(1, {1}, {}, 0.75)}}};
  const RunSummary clean = summarize(clean_peers, {}, {});
  const std::string tiles = summaryTiles(attacked, &clean);
  EXPECT_THAT(tiles, HasSubstr("honest test accuracy (mean)"));
  EXPECT_THAT(tiles, HasSubstr("0.7000"));
  EXPECT_THAT(tiles, HasSubstr("clean baseline 0.7500; this run -5.0 points"));
  EXPECT_THAT(tiles, HasSubstr("<div class='tile alarm'><div class='tile-label'>crashed peers"));
  EXPECT_THAT(tiles, HasSubstr("detection rate"));
  const auto charts = reportCharts(attacked, {}, &clean);
  ASSERT_EQ(charts[0].name, "accuracy");
  EXPECT_THAT(charts[0].svg, HasSubstr("clean baseline (mean)"));
  EXPECT_THAT(charts[0].svg, HasSubstr("stroke-dasharray"));
  const std::string html =
      reportHtml(attacked, {}, {.summary_json = summaryJson(attacked), .baseline = clean});
  EXPECT_THAT(html, HasSubstr("class='tiles'"));
  EXPECT_THAT(html, HasSubstr("Summary as JSON"));
}

TEST(Grafana, DashboardQueriesOnlyMetricsANodeExports) {
  node::NodeMetrics m;
  m.peer_excluded_total[1] = m.peer_heard_total[1] = m.deadline_misses_total[1] = 1;
  m.peer_distance[1] = 0.5;
  m.messages_rejected_total["invalid_payload"] = 1;
  m.round_seconds.observe(0.1);
  const std::string exported = m.prometheus();
  std::ifstream in(testing::sourceDir() + "/tools/deploy/grafana/phalanx.json");
  const std::string dashboard{std::istreambuf_iterator<char>(in), {}};
  ASSERT_FALSE(dashboard.empty());
  std::size_t checked = 0;
  for (std::size_t at = 0; (at = dashboard.find("phalanx_", at)) != std::string::npos;) {
    std::size_t end = at;
    while (end < dashboard.size() &&
           (std::isalnum(static_cast<unsigned char>(dashboard[end])) || dashboard[end] == '_'))
      ++end;
    const std::string name = dashboard.substr(at, end - at);
    EXPECT_THAT(exported, HasSubstr(name + "{")) << name;
    ++checked;
    at = end;
  }
  EXPECT_GT(checked, 10u);
}

}  // namespace
}  // namespace phalanx::tools
