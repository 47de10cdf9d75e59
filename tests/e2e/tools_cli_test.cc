// launch, inject and monitor driven as a user would: a ten-peer Fashion-MNIST cluster under
// `phalanx launch`, a crash injected into an honest peer midway and an attack switched on in
// another, the summary and report checked (the report loaded in headless Chromium), the
// commands built for other hosts, and ports in use refused. Each test has its own ports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <asio.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/json_files.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace phalanx {
namespace {

using namespace std::chrono_literals;
using testing::generateTopology;
using ::testing::HasSubstr;
using testing::jsonLines;
using testing::phalanxBinary;
using testing::runProcess;
using testing::sourceDir;
namespace fs = std::filesystem;

bool waitForRounds(const fs::path& jsonl, std::size_t rounds, std::chrono::seconds limit) {
  return testing::waitFor([&] { return jsonLines(jsonl).size() >= rounds; }, limit);
}

// Share of honest peer-rounds, in [from, to), whose rule excluded peer `byzantine` when it mixed
// it.
double detection(const fs::path& out, std::set<int> honest, int byzantine, std::uint64_t from,
                 std::uint64_t to) {
  int mixed = 0, excluded = 0;
  for (const int i : honest) {
    for (const auto& r : jsonLines(out / ("node-" + std::to_string(i) + ".jsonl"))) {
      const auto round = r["round"].get<std::uint64_t>();
      if (round < from || round >= to) continue;
      const auto m = r["mixed"].get<std::vector<int>>();
      // Convicted as an equivocator (an attack switched mid-round signs two vectors for it) and
      // left out of the mix: detected too.
      const auto caught = r.value("equivocators", std::vector<int>{});
      if (std::find(m.begin(), m.end(), byzantine) == m.end()) {
        if (std::find(caught.begin(), caught.end(), byzantine) == caught.end()) continue;
        ++mixed;
        ++excluded;
        continue;
      }
      ++mixed;
      const auto e = r["excluded"].get<std::vector<int>>();
      excluded += std::find(e.begin(), e.end(), byzantine) != e.end();
    }
  }
  return mixed > 0 ? double(excluded) / mixed : 0;
}

TEST(ToolsCli, LaunchReportsAnInjectedCrashAndTheDetectionFollowsAnAttackSwitch) {
  testing::TempDir dir;
  const fs::path topology = dir.path() / "complete-10.yaml";
  ASSERT_TRUE(generateTopology(
      topology,
      "--kind complete --n 10 --base-port 7910 --metrics-base-port 8010 --byzantine-budget 2"));
  const fs::path out = dir.path() / "run";
  // Peer 9 is Byzantine but starts honest (attack none); the control token lets inject in.
  auto launch = std::async(std::launch::async, [&] {
    return runProcess(
        phalanxBinary() + " launch --topology " + topology.string() + " --config " + sourceDir() +
        "/configs/monna-fmnist.yaml --byzantine 9 --attack none --set control.token=s3cret --out " +
        out.string());
  });
  const std::string inject =
      phalanxBinary() + " inject --topology " + topology.string() + " --token s3cret ";
  ASSERT_TRUE(waitForRounds(out / "node-3.jsonl", 60, 120s)) << launch.get().output;
  const auto crash = runProcess(inject + "--node 3 crash");
  EXPECT_EQ(crash.exit_code, 0) << crash.output;
  ASSERT_TRUE(waitForRounds(out / "node-0.jsonl", 120, 120s)) << launch.get().output;
  const auto switched = runProcess(inject + "--node 9 attack signflip --json");
  EXPECT_EQ(switched.exit_code, 0) << switched.output;
  {  // --json: one object saying what the node confirmed
    const std::string out_text = switched.output;
    const auto said = nlohmann::json::parse(
        out_text.substr(out_text.rfind('{', out_text.find_last_not_of("\n"))), nullptr, false);
    ASSERT_FALSE(said.is_discarded()) << out_text;
    EXPECT_EQ(said["node"], 9);
    EXPECT_EQ(said["fault"], "attack signflip");
    EXPECT_EQ(said["outcome"], "applied");
  }
  const std::uint64_t switch_round =
      jsonLines(out / "node-0.jsonl").back()["round"].get<std::uint64_t>();
  const auto bad = runProcess(inject + "--node 9 drop 7");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("expected a number in [0, 1]"));

  ASSERT_EQ(launch.wait_for(240s), std::future_status::ready) << "launch still running";
  const auto result = launch.get();
  EXPECT_EQ(result.exit_code, 1) << "an honest peer crashed: launch must say so\n" << result.output;

  std::ifstream summary_file(out / "summary.json");
  const auto summary = nlohmann::json::parse(summary_file, nullptr, false);
  ASSERT_FALSE(summary.is_discarded());
  EXPECT_EQ(summary["crashed"], nlohmann::json::array({3}));
  EXPECT_EQ(summary["byzantine"], nlohmann::json::array({9}));
  EXPECT_GE(summary["honest_accuracy_mean"].get<double>(), 0.78) << summary.dump();
  EXPECT_EQ(summary["rounds"].get<int>(), 300);
  for (const char* key :
       {"consensus_distance", "byzantine_leakage", "detection_rate", "compression_ratio"}) {
    EXPECT_TRUE(summary[key].is_number()) << key << ": " << summary.dump();
  }
  const std::set<int> honest{0, 1, 2, 4, 5, 6, 7, 8};
  const double before = detection(out, honest, 9, 0, switch_round);
  const double after = detection(out, honest, 9, switch_round + 5, 300);
  std::printf(
      "crash of peer 3 reported; honest mean accuracy %.4f; detection of peer 9: %.3f before the "
      "switch to signflip at round %llu, %.3f after\n",
      summary["honest_accuracy_mean"].get<double>(), before, (unsigned long long)switch_round,
      after);
  // Before the switch peer 9 sends honest vectors, and NNA still leaves it out of 42–50 % of
  // the mixes it is in over runs here (more than b/deg: on the edge of a 0.5 bound, which
  // failed one CI run at 0.503) — but not of every one, as after the switch. So the bound
  // compares the two within the run.
  EXPECT_LT(before, 0.75);
  EXPECT_GT(after, 0.9);
  EXPECT_GT(after - before, 0.3);

  // The same summary again from the folder alone.
  const auto again = runProcess(phalanxBinary() + " monitor --from " + out.string() +
                                " --summary " + (dir.path() / "again.json").string());
  ASSERT_EQ(again.exit_code, 0) << again.output;
  std::ifstream again_file(dir.path() / "again.json");
  const auto rebuilt = nlohmann::json::parse(again_file, nullptr, false);
  EXPECT_EQ(rebuilt["detection_rate"], summary["detection_rate"]);
  EXPECT_EQ(rebuilt["crashed"], summary["crashed"]);
  // Each plot as SVG and PNG (rsvg-convert): real PNGs of the chart's size; with --json, stdout
  // is one object naming them.
  const fs::path plots = dir.path() / "plots";
  const auto png_run = runProcess("(" + phalanxBinary() + " monitor --from " + out.string() +
                                  " --png " + plots.string() + " --json 2>/dev/null)");
  ASSERT_EQ(png_run.exit_code, 0) << png_run.output;
  const auto printed = nlohmann::json::parse(png_run.output, nullptr, false);
  ASSERT_FALSE(printed.is_discarded()) << png_run.output;
  EXPECT_EQ(printed["summary"]["detection_rate"], summary["detection_rate"]);
  ASSERT_GE(printed["files"]["plots"].size(), 4u);
  for (const auto& png : printed["files"]["plots"]) {
    EXPECT_TRUE(fs::exists(png.get<std::string>())) << png;
  }
  for (const char* name : {"accuracy", "consensus", "detection", "accuracy-vs-bytes"}) {
    const fs::path plot = plots / (std::string(name) + ".png");
    ASSERT_TRUE(fs::exists(plot)) << plot;
    std::ifstream in(plot, std::ios::binary);
    char head[24] = {};
    in.read(head, sizeof head);
    EXPECT_EQ(std::string(head + 1, 3), "PNG") << plot;
    const auto be32 = [&](int at) {
      return (unsigned(std::uint8_t(head[at])) << 24) |
             (unsigned(std::uint8_t(head[at + 1])) << 16) |
             (unsigned(std::uint8_t(head[at + 2])) << 8) | unsigned(std::uint8_t(head[at + 3]));
    };
    EXPECT_EQ(be32(16), 640u) << plot;  // IHDR width and height: the SVG's
    EXPECT_EQ(be32(20), 320u) << plot;
    EXPECT_TRUE(fs::exists(plots / (std::string(name) + ".svg")));
  }

  // The report renders in headless Chromium: every plot and the heatmap are in the DOM, and a
  // screenshot comes out.
  const std::string chromium = "chromium --headless --no-sandbox --disable-gpu --hide-scrollbars ";
  const auto dom =
      runProcess(chromium + "--dump-dom file://" + (out / "report.html").string() + " 2>/dev/null");
  ASSERT_EQ(dom.exit_code, 0) << "chromium (Debian's package, tools/install-deps) did not run";
  EXPECT_THAT(dom.output, HasSubstr("Exclusions per peer"));
  EXPECT_THAT(dom.output, HasSubstr("Honest test accuracy"));
  EXPECT_THAT(dom.output, HasSubstr("Consensus distance among honest peers"));
  const fs::path png = dir.path() / "report.png";
  runProcess(chromium + "--window-size=1400,1800 --screenshot=" + png.string() + " file://" +
             (out / "report.html").string());
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 20'000u);
}

TEST(ToolsCli, CtrlCTearsTheClusterDownAndStillWritesTheSummary) {
  testing::TempDir dir;
  const fs::path topology = dir.path() / "complete-4.yaml";
  ASSERT_TRUE(generateTopology(topology,
                               "--kind complete --n 4 --base-port 7940 --metrics-base-port 8040"));
  const fs::path out = dir.path() / "run";
  const auto started = runProcess(
      phalanxBinary() + " launch --topology " + topology.string() + " --config " + sourceDir() +
      "/configs/monna-fmnist.yaml --rounds 100000 --set control.token=s3cret "
      "--out " +
      out.string() + " > " + (dir.path() / "launch.log").string() + " 2>&1 & echo $!");
  const int pid = std::atoi(started.output.c_str());
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(waitForRounds(out / "node-0.jsonl", 20, 120s));
  // A hung peer does not answer a control command in time: inject says so and fails, instead
  // of reporting it applied.
  const std::string inject =
      phalanxBinary() + " inject --topology " + topology.string() + " --token s3cret --node 1 ";
  const auto hang = runProcess(inject + "hang 6");
  EXPECT_EQ(hang.exit_code, 0) << hang.output;
  const auto busy = runProcess(inject + "drop 0");
  EXPECT_EQ(busy.exit_code, 1) << busy.output;
  EXPECT_THAT(busy.output, HasSubstr("did not apply 'drop 0' in time"));
  ::kill(pid, SIGINT);
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (::kill(pid, 0) == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(50ms);
  ASSERT_NE(::kill(pid, 0), 0) << "launch still running 60 s after Ctrl-C";
  // Every peer left with a Goodbye; the summary and report exist.
  for (int i = 0; i < 4; ++i) {
    std::ifstream log(out / ("node-" + std::to_string(i) + ".log"));
    const std::string text{std::istreambuf_iterator<char>(log), {}};
    EXPECT_THAT(text, HasSubstr("signal 15: leaving")) << "peer " << i;
  }
  EXPECT_TRUE(fs::exists(out / "summary.json"));
  EXPECT_TRUE(fs::exists(out / "report.html"));
  // ("[ ]" keeps the pattern from matching the shell that runs pgrep.)
  EXPECT_EQ(runProcess("pgrep -f 'node --topology[ ]" + topology.string() + "'").exit_code, 1)
      << "a peer outlived launch";
}

TEST(ToolsCli, DivergedPeersStopAndTheRunEndsInsteadOfWaitingOutDeadlines) {
  // The mean under a strong IPM blows the honest models up within a few rounds: each honest
  // peer evaluates once more and exits 3, and launch then dismisses the attacker, which would
  // otherwise sit out a deadline in each of the remaining rounds.
  testing::TempDir dir;
  const fs::path topology = dir.path() / "t.yaml", out = dir.path() / "run";
  ASSERT_TRUE(generateTopology(
      topology,
      "--kind complete --n 6 --base-port 7990 --metrics-base-port 8090 --byzantine-budget 1"));
  const auto r = runProcess(
      phalanxBinary() + " launch --topology " + topology.string() + " --config " + sourceDir() +
      "/configs/experiments/smoke-base.yaml --byzantine 5 --attack ipm --set byzantine.5.tau=100 "
      "--set mixing.rule=mean --rounds 400 --out " +
      out.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;  // the honest peers did not finish their rounds
  EXPECT_THAT(r.output, HasSubstr("every honest peer has stopped"));
  std::ifstream in(out / "summary.json");
  const auto summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary["diverged"].get<std::vector<int>>(), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(summary["crashed"].empty());
  // The collapse is on record: the last evaluation's loss. (Not the accuracy: a model scaled by
  // a large negative factor an even number of times can still rank the classes well.)
  const auto honest = jsonLines(out / "node-0.jsonl");
  ASSERT_FALSE(honest.empty());
  const auto& final_eval = honest.back()["test_loss"];
  EXPECT_TRUE(final_eval.is_null() || final_eval.get<double>() > 1e6) << honest.back().dump();
  const auto attacker = jsonLines(out / "node-5.jsonl");
  ASSERT_FALSE(attacker.empty());
  EXPECT_LT(attacker.back()["round"].get<int>(), 399);  // stopped, not run to the end
  EXPECT_THAT(runProcess("cat " + (out / "node-0.log").string()).output, HasSubstr("diverged"));
}

TEST(ToolsCli, LaunchBuildsSshCommandsForOtherHosts) {
  testing::TempDir dir;
  const auto topology = dir.write("two-hosts.yaml", R"(nodes:
  - {id: 0, host: 127.0.0.1, port: 7950, metrics_port: 8050}
  - {id: 1, host: 192.0.2.7, port: 7950, metrics_port: 8050}
edges: [[0, 1]]
byzantine_budget: 0
)");
  const auto r = runProcess(
      phalanxBinary() + " launch --dry-run --topology " + topology.string() + " --config " +
      sourceDir() + "/configs/monna-fmnist.yaml --remote-binary /opt/phalanx/bin/phalanx --out " +
      (dir.path() / "run").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(" node --topology " + topology.string()));
  const std::string run = (dir.path() / "run").string();
  EXPECT_THAT(r.output, HasSubstr("ssh -tt 192.0.2.7 'mkdir -p " + run + " && echo $$ > " + run +
                                  "/node-1.pid && { stty -onlcr 2>/dev/null; exec "
                                  "/opt/phalanx/bin/phalanx node --topology"));
  EXPECT_FALSE(fs::exists(dir.path() / "run")) << "a dry run starts nothing";
}

TEST(ToolsCli, LaunchRefusesPortsInUseAndBadInput) {
  testing::TempDir dir;
  const fs::path topology = dir.path() / "ring.yaml";
  ASSERT_TRUE(generateTopology(topology,
                               "--kind complete --n 3 --base-port 7960 --metrics-base-port 8060"));
  asio::io_context io;
  asio::ip::tcp::acceptor taken(io, {asio::ip::make_address("127.0.0.1"), 7961});
  const std::string launch = phalanxBinary() + " launch --topology " + topology.string() +
                             " --config " + sourceDir() + "/configs/monna-fmnist.yaml --out " +
                             (dir.path() / "run").string();
  const auto r = runProcess(launch);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("port 7961 of node 1 on 127.0.0.1 is in use"));
  const auto bad = runProcess(launch + " --set mixing.rule=median");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.output, HasSubstr("mixing.rule"));
  const auto unknown = runProcess(launch + " --byzantine 7");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.output, HasSubstr("no node 7"));
}

// Every peer dies at once (here: a wrapper that fails as a script without torch would): launch
// says, on the console, how each ended and the end of its output; a node whose port is taken
// names the port and refuses (exit 2).
TEST(ToolsCli, LaunchSaysWhyPeersDiedAndANodeNamesItsBusyPort) {
  testing::TempDir dir;
  const fs::path topology = dir.path() / "pair.yaml";
  ASSERT_TRUE(generateTopology(topology,
                               "--kind complete --n 2 --base-port 7975 --metrics-base-port 8075"));
  const fs::path die = dir.path() / "die.sh";
  std::ofstream(die) << "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch' (peer "
                        "$1)\" >&2\nexit 1\n";
  fs::permissions(die, fs::perms::owner_all);
  const std::string config = sourceDir() + "/configs/monna-fmnist.yaml";
  const auto r = runProcess(phalanxBinary() + " launch --topology " + topology.string() +
                            " --config " + config + " --rounds 3 --wrap '" + die.string() +
                            " {id}' --out " + (dir.path() / "run").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("peer 0 ended with exit code 1"));
  EXPECT_THAT(r.output, HasSubstr("No module named 'torch' (peer 1)"));

  asio::io_context io;
  asio::ip::tcp::acceptor taken(io, {asio::ip::make_address("127.0.0.1"), 7976});
  const auto node =
      runProcess(phalanxBinary() + " node --topology " + topology.string() + " --config " + config +
                 " --id 1 --rounds 1 --set security.mode=none");
  EXPECT_EQ(node.exit_code, 2) << node.output;
  EXPECT_THAT(node.output, HasSubstr("cannot listen on 127.0.0.1:7976"));
}

// inject reads its command before it connects: a typo is exit 2 with the reason, and a crash
// aimed at a port where no node listens is no success.
TEST(ToolsCli, InjectRefusesATypoBeforeConnectingAndACrashNobodyReceived) {
  testing::TempDir dir;
  const fs::path topology = dir.path() / "pair.yaml";
  ASSERT_TRUE(generateTopology(topology,
                               "--kind complete --n 2 --base-port 7970 --metrics-base-port 8070"));
  const std::string inject =
      phalanxBinary() + " inject --topology " + topology.string() + " --token s3cret --node 1 ";
  const auto typo = runProcess(inject + "partiton 0");
  EXPECT_EQ(typo.exit_code, 2) << typo.output;
  EXPECT_THAT(typo.output, HasSubstr("unknown fault 'partiton'"));
  EXPECT_THAT(typo.output, ::testing::Not(HasSubstr("did not answer")));  // never sent
  const auto restart = runProcess(inject + "restart");
  EXPECT_EQ(restart.exit_code, 2) << restart.output;
  EXPECT_THAT(restart.output, HasSubstr("--resume"));
  const auto crash = runProcess(inject + "crash");
  EXPECT_EQ(crash.exit_code, 1) << crash.output;
  EXPECT_THAT(crash.output, HasSubstr("did not answer"));
}

// tools/netem: three peers in their own network namespaces, started by launch --wrap. The
// links are shaped (10 ms each way) only where the kernel has the netem qdisc.
TEST(ToolsCli, NetemPutsPeersInNamespacesThatLaunchWraps) {
  if (geteuid() != 0 || runProcess("ip netns list").exit_code != 0)
    GTEST_SKIP() << "needs root and iproute2";
  const bool shaping =
      runProcess("tc qdisc add dev lo root netem delay 0ms && tc qdisc del dev lo root")
          .exit_code == 0;
  const std::string netem = sourceDir() + "/tools/netem ";
  runProcess(netem + "down --prefix pxt");  // leftovers of an interrupted run
  const auto up = runProcess(netem + "up 3 --prefix pxt" + (shaping ? " --delay 10" : ""));
  ASSERT_EQ(up.exit_code, 0) << up.output;
  testing::TempDir dir;
  const fs::path topology = dir.path() / "netem.yaml";
  const auto gen =
      runProcess("cd " + sourceDir() + " && " + netem + "topology 3 --base-port 7980 " +
                 "--metrics-base-port 8080 > " + topology.string());
  EXPECT_EQ(gen.exit_code, 0) << gen.output;
  const fs::path out = dir.path() / "run";
  const auto r = runProcess(
      phalanxBinary() + " launch --topology " + topology.string() + " --config " + sourceDir() +
      "/configs/monna-fmnist.yaml --rounds 30 --wrap 'ip netns exec pxt{id}' --out " +
      out.string());
  const auto down = runProcess(netem + "down --prefix pxt");
  EXPECT_EQ(down.exit_code, 0) << down.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream summary_file(out / "summary.json");
  const auto summary = nlohmann::json::parse(summary_file, nullptr, false);
  EXPECT_EQ(summary["rounds"].get<int>(), 30) << summary.dump();
  std::ifstream topology_file(topology);
  EXPECT_THAT(std::string(std::istreambuf_iterator<char>(topology_file), {}),
              HasSubstr("host: \"10.77.0.3\""));
  if (shaping) {
    // A round waits for every neighbour's message: at least one shaped 20 ms round trip.
    EXPECT_GE(summary["round_seconds_mean"].get<double>(), 0.02) << summary.dump();
  }
  std::printf("netem: 3 namespaced peers, 30 rounds, mean round %.4f s (%s)\n",
              summary["round_seconds_mean"].get<double>(),
              shaping ? "10 ms each way" : "no netem qdisc: unshaped");
}

// --log-level is the root's, and works after the subcommand too (it used to be refused there).
TEST(ToolsCli, LogLevelIsTakenBeforeOrAfterTheSubcommand) {
  const std::string gen = " topology gen --kind complete --n 3";
  EXPECT_EQ(runProcess(phalanxBinary() + " --log-level warn" + gen).exit_code, 0);
  const auto after = runProcess(phalanxBinary() + gen + " --log-level warn");
  EXPECT_EQ(after.exit_code, 0) << after.output;
  const auto bad = runProcess(phalanxBinary() + gen + " --log-level loud");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("--log-level"));
}

TEST(ToolsCli, MonitorPrintsAPrometheusScrapeConfig) {
  const auto r = runProcess(phalanxBinary() + " monitor --prometheus-config " + sourceDir() +
                            "/topologies/complete-10.yaml");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("scrape_configs:"));
  // `node`, not `peer`: the metrics' own `peer` label (whom a node excluded) must survive.
  EXPECT_THAT(r.output, HasSubstr("labels: {node: '9'}"));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("peer:")));
}

// launch --churn: honest peers SIGKILLed at random during the run come back with --resume and
// every honest peer still finishes. A kill a second on average against a run of several
// seconds; kills stop once an honest peer has finished, and a peer back after the others have
// left finishes on its own.
TEST(ToolsCli, LaunchChurnKillsAndRestartsHonestPeersAndTheRunStillEnds) {
  testing::TempDir dir;
  const fs::path topology = dir.path() / "complete-6.yaml";
  ASSERT_TRUE(generateTopology(
      topology,
      "--kind complete --n 6 --base-port 7730 --metrics-base-port 8130 --byzantine-budget 1"));
  const fs::path out = dir.path() / "run";
  const auto r = runProcess(phalanxBinary() + " launch --topology " + topology.string() +
                            " --config " + sourceDir() +
                            "/configs/monna-fmnist.yaml --byzantine 5 --attack alie "
                            "--rounds 400 --churn 60 --churn-down 0.5 --churn-seed 3 "
                            // A peer back after the others have left runs its remaining rounds
                            // alone, each waiting out the ceiling: 0.5 s, not 3, so a loaded
                            // machine's worst case still fits the test's limit.
                            "--set rounds.deadline_ms=500 --out " +
                            out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("checkpoints every 10 rounds"));
  const auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = r.output.find(what); at != std::string::npos;
         at = r.output.find(what, at + 1)) {
      ++n;
    }
    return n;
  };
  const std::size_t kills = count("churn: SIGKILL to peer");
  EXPECT_GE(kills, 1u) << r.output;
  EXPECT_EQ(count("restarts from its newest checkpoint"), kills);
  EXPECT_EQ(r.output.find("SIGKILL to peer 5"), std::string::npos);  // honest peers only
  const auto summary = nlohmann::json::parse(std::ifstream(out / "summary.json"), nullptr, false);
  ASSERT_FALSE(summary.is_discarded());
  EXPECT_TRUE(summary["crashed"].empty()) << summary.dump();
  for (int id = 0; id < 5; ++id) {
    EXPECT_EQ(jsonLines(out / ("node-" + std::to_string(id) + ".jsonl")).back()["round"], 399)
        << "peer " << id;
  }
}

TEST(ToolsCli, K8sWritesManifestsAndRefusesBadInputBeforeAnyPodStarts) {
  testing::TempDir dir;
  const std::string out = (dir.path() / "run.yaml").string();
  const std::string k8s = phalanxBinary() + " k8s --topology " + sourceDir() +
                          "/topologies/complete-10.yaml --config " + sourceDir() +
                          "/configs/monna-fmnist.yaml --image phalanx:test";
  const auto r = runProcess(k8s + " --byzantine 8,9 --attack opt_foe --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream file(out);
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("kind: StatefulSet"));
  EXPECT_THAT(text, HasSubstr("replicas: 10"));
  EXPECT_THAT(text, HasSubstr("host: \"phalanx-9.phalanx.default.svc.cluster.local\""));
  EXPECT_THAT(text,
              HasSubstr("--set 'byzantine.8.attack=opt_foe' --set 'byzantine.9.attack=opt_foe'"));
  const auto bad_field = runProcess(k8s + " --set mixing.rule=median");
  EXPECT_EQ(bad_field.exit_code, 2);
  EXPECT_THAT(bad_field.output, HasSubstr("mixing.rule"));
  const auto bad_attack = runProcess(k8s + " --byzantine 8 --attack crash");
  EXPECT_EQ(bad_attack.exit_code, 2);
  // Refused by the command line, before a manifest is made.
  EXPECT_THAT(bad_attack.output, HasSubstr("--attack: 'crash' is not something"));
  const auto bad_name = runProcess(k8s + " --name Phalanx_Run");
  EXPECT_EQ(bad_name.exit_code, 2);
  EXPECT_THAT(bad_name.output, HasSubstr("not a DNS label"));
  const auto unknown = runProcess(k8s + " --byzantine 12");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.output, HasSubstr("no node 12"));
}

}  // namespace
}  // namespace phalanx
