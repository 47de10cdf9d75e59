// `phalanx node` as real processes: ten peers on a complete graph training the Fashion-MNIST
// MLP (configs/monna-fmnist*.yaml), two of them Byzantine; a peer killed with SIGKILL and
// restarted with --resume; garbage written to a peer's port. Each test uses its own ports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <asio.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace phalanx {
namespace {

using namespace std::chrono_literals;
using testing::phalanxBinary;
using testing::runProcess;
using testing::sourceDir;

constexpr int kPeers = 10;

// The value after "key": in a flat JSON object; NaN when absent.
double field(const std::string& json, const std::string& key) {
  const std::string needle = "\"" + key + "\": ";
  const auto at = json.find(needle);
  return at == std::string::npos ? std::nan("")
                                 : std::strtod(json.c_str() + at + needle.size(), nullptr);
}

// The ids in "key": [a,b,...].
std::set<int> idsOf(const std::string& json, const std::string& key) {
  std::set<int> out;
  const auto at = json.find("\"" + key + "\": [");
  if (at == std::string::npos) return out;
  std::istringstream in(json.substr(json.find('[', at) + 1));
  int id = 0;
  char sep = 0;
  while (in >> id) {
    out.insert(id);
    if (!(in >> sep) || sep == ']') break;
  }
  return out;
}

std::vector<std::string> lines(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

class NodeCluster {
 public:
  // Ten peers, complete graph, budget 2, nodes on base_port + k, metrics on base_port + 100 + k.
  explicit NodeCluster(int base_port) : base_port_(base_port) {
    topology_ = dir_.path() / "complete-10.yaml";
    const auto gen = runProcess(
        phalanxBinary() + " topology gen --kind complete --n 10 --base-port " +
        std::to_string(base_port) + " --metrics-base-port " + std::to_string(base_port + 100) +
        " --byzantine-budget 2 > " + topology_.string());
    EXPECT_EQ(gen.exit_code, 0) << gen.output;
    // security: tls (the default), with the cluster's certificates (kept across clearOut()).
    const auto certs = runProcess(phalanxBinary() + " certs " + (dir_.path() / "certs").string() +
                                  " --topology " + topology_.string());
    EXPECT_EQ(certs.exit_code, 0) << certs.output;
  }

  // A failed assertion must not leave peers running after the test.
  ~NodeCluster() {
    for (const int pid : started_) ::kill(pid, SIGKILL);
  }
  void track(int pid) { started_.push_back(pid); }

  std::string nodeCommand(int id, const std::string& config, const std::string& extra) const {
    return phalanxBinary() + " node --topology " + topology_.string() + " --config " + sourceDir() +
           "/configs/" + config + " --id " + std::to_string(id) + " --out " + out().string() +
           " --set security.dir=" + (dir_.path() / "certs").string() + " " + extra + " >>" +
           (out() / ("stdout-" + std::to_string(id))).string() + " 2>&1";
  }

  // Starts every peer in the background; returns their pids.
  std::vector<int> launch(const std::string& config, const std::string& extra) {
    std::filesystem::create_directories(out());
    std::string script;
    for (int i = 0; i < kPeers; ++i) script += nodeCommand(i, config, extra) + " & echo $!; ";
    const auto r = runProcess(script);
    std::istringstream in(r.output);
    std::vector<int> pids;
    for (int pid = 0; in >> pid;) pids.push_back(pid);
    EXPECT_EQ(pids.size(), std::size_t(kPeers)) << r.output;
    started_.insert(started_.end(), pids.begin(), pids.end());
    return pids;
  }

  // Waits for processes that are not our children (the shell started them).
  static bool waitGone(const std::vector<int>& pids, std::chrono::seconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      bool any = false;
      for (int pid : pids) any |= ::kill(pid, 0) == 0 && !zombie(pid);
      if (!any) return true;
      std::this_thread::sleep_for(100ms);
    }
    for (int pid : pids) ::kill(pid, SIGKILL);
    return false;
  }

  // The whole run: launch, wait, and the last JSON line of every peer.
  std::vector<std::string> run(const std::string& config, const std::string& extra) {
    const auto pids = launch(config, extra);
    EXPECT_TRUE(waitGone(pids, 240s)) << "peers still running after 240 s\n" << describe();
    std::vector<std::string> last;
    for (int i = 0; i < kPeers; ++i) {
      const auto all = lines(jsonl(i));
      last.push_back(all.empty() ? "" : all.back());
    }
    return last;
  }

  double honestMeanAccuracy(const std::vector<std::string>& last, std::set<int> byzantine) const {
    double sum = 0;
    int n = 0;
    for (int i = 0; i < kPeers; ++i) {
      if (byzantine.contains(i)) continue;
      sum += field(last[i], "test_accuracy");
      ++n;
    }
    return sum / n;
  }

  // Where each peer stands: its last jsonl line and the tail of its log, for failure messages.
  std::string describe() const {
    std::string text;
    for (int i = 0; i < kPeers; ++i) {
      const auto rounds = lines(jsonl(i));
      text += "peer " + std::to_string(i) + ": " + std::to_string(rounds.size()) +
              " rounds; last " +
              (rounds.empty() ? std::string("-") : rounds.back().substr(0, 160)) + "\n";
      const auto log = lines(out() / ("node-" + std::to_string(i) + ".log"));
      for (std::size_t k = log.size() > 4 ? log.size() - 4 : 0; k < log.size(); ++k) {
        text += "    " + log[k] + "\n";
      }
    }
    return text;
  }

  std::filesystem::path out() const { return dir_.path() / "out"; }
  std::filesystem::path jsonl(int id) const {
    return out() / ("node-" + std::to_string(id) + ".jsonl");
  }
  int port(int id) const { return base_port_ + id; }
  int metricsPort(int id) const { return base_port_ + 100 + id; }
  void clearOut() { std::filesystem::remove_all(out()); }

 private:
  static bool zombie(int pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string skip, state;
    stat >> skip >> skip >> state;
    return state == "Z";
  }

  testing::TempDir dir_;
  std::filesystem::path topology_;
  std::vector<int> started_;
  int base_port_;
};

// These tests measure a rule against attackers, so every round waits for every live neighbour
// (no quorum close): the attackers' vectors, sent after the honest ones, enter every mix.
const std::string kTwoAttackers(const std::string& attack) {
  return "--set byzantine.8.attack=" + attack + " --set byzantine.9.attack=" + attack +
         " --set rounds.quorum=false";
}

TEST(NodeCli, NnaHoldsUnderAlieAndSignflipWhileMeanBreaks) {
  NodeCluster cluster(7110);
  for (const char* attack : {"alie", "signflip"}) {
    cluster.clearOut();
    const auto last = cluster.run("monna-fmnist.yaml", kTwoAttackers(attack));
    const double accuracy = cluster.honestMeanAccuracy(last, {8, 9});
    std::printf("nna under %s: honest mean test accuracy %.4f\n", attack, accuracy);
    EXPECT_GE(accuracy, 0.78) << attack;
    for (int i = 0; i < 8; ++i) EXPECT_EQ(field(last[i], "round"), 299) << last[i];
  }
  cluster.clearOut();
  const auto last =
      cluster.run("monna-fmnist.yaml", kTwoAttackers("signflip") + " --set mixing.rule=mean");
  const double accuracy = cluster.honestMeanAccuracy(last, {8, 9});
  std::printf("mean under signflip: honest mean test accuracy %.4f\n", accuracy);
  EXPECT_LT(accuracy, 0.5);
}

// A compressed run with peers 8 and 9 attacking: honest mean accuracy, and the smallest
// ratio of dense fp32 bytes to wire bytes among the honest peers.
std::pair<double, double> compressedRun(int base_port, const std::string& config,
                                        const std::string& attack) {
  NodeCluster cluster(base_port);
  const auto last = cluster.run(config, kTwoAttackers(attack));
  double ratio = 1e9;
  for (int i = 0; i < 8; ++i) {
    ratio =
        std::min(ratio, field(last[i], "dense_bytes_total") / field(last[i], "bytes_sent_total"));
  }
  const double accuracy = cluster.honestMeanAccuracy(last, {8, 9});
  std::printf("%s under %s: honest mean test accuracy %.4f, dense/wire bytes >= %.1f\n",
              config.c_str(), attack.c_str(), accuracy, ratio);
  return {accuracy, ratio};
}

TEST(NodeCli, TopkGossipLearnsOnFiftyTimesFewerBytes) {
  const auto [accuracy, ratio] = compressedRun(7310, "monna-fmnist-topk.yaml", "alie");
  EXPECT_GE(accuracy, 0.76);
  EXPECT_GE(ratio, 50.0);
}

TEST(NodeCli, DgcGradientModeLearnsUnderSignflipOnFewerBytes) {
  const auto [accuracy, ratio] = compressedRun(7710, "monna-fmnist-dgc.yaml", "signflip");
  EXPECT_GE(accuracy, 0.78);
  EXPECT_GE(ratio, 30.0);
}

TEST(NodeCli, KilledPeerResumesAndGarbageIsCounted) {
  NodeCluster cluster(7510);
  // A ceiling of 0.5 s, not 3: on a loaded machine the others may finish before the restarted
  // peer is back, and it then runs its remaining ~200 rounds alone, each waiting out the
  // ceiling for neighbours who have left (240 s of them at 3 s a round would not fit).
  const std::string extra =
      "--set checkpoint.every=10 --set control.token=e2e --set rounds.deadline_ms=500";
  auto pids = cluster.launch("monna-fmnist.yaml", extra);
  ASSERT_EQ(pids.size(), std::size_t(kPeers));
  // Mid-run: SIGKILL peer 3.
  const auto until = std::chrono::steady_clock::now() + 120s;
  while (lines(cluster.jsonl(3)).size() < 100 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_GE(lines(cluster.jsonl(3)).size(), 100u);
  ::kill(pids[3], SIGKILL);
  const std::size_t before = lines(cluster.jsonl(3)).size();
  const double killed_at = field(lines(cluster.jsonl(3)).back(), "round");
  // Restart from its checkpoint at once: the others need only seconds for the rest of the run,
  // and a peer that comes back after they have all left has nobody to rejoin.
  const auto restarted =
      runProcess(cluster.nodeCommand(3, "monna-fmnist.yaml", extra + " --resume") + " & echo $!");
  pids[3] = std::atoi(restarted.output.c_str());
  cluster.track(pids[3]);

  // Garbage on peer 0's port, then its /metrics counts it.
  asio::io_context io;
  asio::ip::tcp::socket rogue(io);
  rogue.connect({asio::ip::make_address("127.0.0.1"), std::uint16_t(cluster.port(0))});
  asio::write(rogue, asio::buffer(std::string(4096, '\xab')));
  rogue.close();
  std::this_thread::sleep_for(500ms);
  httplib::Client http("127.0.0.1", cluster.metricsPort(0));
  const auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics) << "no answer from /metrics";
  EXPECT_THAT(metrics->body,
              ::testing::HasSubstr("phalanx_messages_rejected_total{node=\"0\",reason="));
  EXPECT_EQ(http.Get("/model")->status, 401);  // the model only with the control token
  const auto model = http.Get("/model", httplib::Headers{{"Authorization", "Bearer e2e"}});
  ASSERT_TRUE(model);
  EXPECT_EQ(model->body.substr(1, 5), "NUMPY");

  ASSERT_TRUE(NodeCluster::waitGone(pids, 240s)) << cluster.describe();

  const auto after = lines(cluster.jsonl(3));
  ASSERT_GT(after.size(), before) << "the restarted peer ran no round";
  const double back = field(after[before], "round");
  // It resumes from its last checkpoint (every 10 rounds), never from the start: when it is back
  // before its neighbours have moved past that round (no evidence from more than b of them to
  // catch up on), it runs again the rounds it logged since: killed after logging round 100, it
  // came back at round 100 in one CI run, from the checkpoint taken before that round.
  EXPECT_GE(back, killed_at - 10);
  // Whether the others mixed it again depends on how soon it was back, which the machine's load
  // decides here (it came back 99 rounds late on a loaded CI machine); the virtual-time harness
  // asserts it exactly (tests/node/simulation_test.cc). What holds whatever the load: a restart
  // that rejoins past its last round is not equivocation, and the run ends well.
  int peers_mixing_it = 0;
  for (int i = 0; i < kPeers; ++i) {
    if (i == 3) continue;
    bool mixed = false;
    for (const auto& line : lines(cluster.jsonl(i))) {
      const double round = field(line, "round");
      if (round >= back && idsOf(line, "mixed").contains(3)) mixed = true;
    }
    peers_mixing_it += mixed;
    EXPECT_EQ(lines(cluster.jsonl(i)).back().find("equivocators"), std::string::npos)
        << "peer " << i;
  }
  std::vector<std::string> last;
  for (int i = 0; i < kPeers; ++i) last.push_back(lines(cluster.jsonl(i)).back());
  const double accuracy = cluster.honestMeanAccuracy(last, {});
  std::printf(
      "kill -9 of peer 3 at round %.0f, back at round %.0f, mixed again by %d of %d peers; mean "
      "test accuracy %.4f\n",
      killed_at, back, peers_mixing_it, kPeers - 1, accuracy);
  EXPECT_GE(accuracy, 0.8);
}

}  // namespace
}  // namespace phalanx
