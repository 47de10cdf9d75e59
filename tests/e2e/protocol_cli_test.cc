// The protocol-level Byzantine roles (docs/PROTOCOL.md) under `phalanx launch`, as a user runs
// them: real processes on loopback, the synthetic task, the jsonl records read back. Nothing
// here asserts on how long a round took: stallers are judged by whether their vectors entered
// honest mixes, round liars by the rounds the honest peers ran, floods by bytes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/support/json_files.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace phalanx {
namespace {

using testing::jsonLines;
using testing::phalanxBinary;
using testing::runProcess;
using testing::sourceDir;
namespace fs = std::filesystem;

bool has(const nlohmann::json& record, const char* field, int id) {
  if (!record.contains(field)) return false;
  for (const auto& x : record[field]) {
    if (x.get<int>() == id) return true;
  }
  return false;
}

// The smoke config with the protocol as shipped: quorum closes on (the smoke base turns them off
// so that its grid measures the rules).
const std::string kSmokeWithQuorum =
    "/configs/experiments/smoke-base.yaml --set rounds.quorum=true";

// A generated topology, then `phalanx launch` on the smoke config with `args`; the run folder.
fs::path launch(const testing::TempDir& dir, const std::string& name, const std::string& gen,
                const std::string& args) {
  const fs::path topology = dir.path() / (name + ".yaml"), out = dir.path() / name;
  EXPECT_TRUE(testing::generateTopology(topology, gen)) << gen;
  const auto r =
      runProcess(phalanxBinary() + " launch --topology " + topology.string() + " --config " +
                 sourceDir() + kSmokeWithQuorum + " --out " + out.string() + " " + args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return out;
}

fs::path jsonl(const fs::path& run, int id) {
  return run / ("node-" + std::to_string(id) + ".jsonl");
}

// Every honest peer runs every round once, in order, to its last (one that catches up with its
// neighbours runs the rounds it skips alone; only joining may start it a round or two late).
void expectAllRoundsRun(const fs::path& run, std::set<int> honest, int rounds) {
  for (const int i : honest) {
    const auto records = jsonLines(jsonl(run, i));
    ASSERT_FALSE(records.empty()) << "peer " << i;
    EXPECT_LE(records.front()["round"].get<int>(), 2) << "peer " << i;
    EXPECT_EQ(records.back()["round"].get<int>(), rounds - 1) << "peer " << i;
    for (std::size_t k = 1; k < records.size(); ++k) {
      ASSERT_EQ(records[k]["round"].get<int>(), records[k - 1]["round"].get<int>() + 1)
          << "peer " << i;
    }
  }
}

TEST(ProtocolCli, ColludingAttackersPoolOverTheirOwnConnections) {
  // Ring of 8, attackers 2 and 6: each hears only its two ring neighbours, together they know
  // 1, 3, 5 and 7. Colluding, they connect to each other (not neighbours in the topology), pool
  // what they hear and the leader (2) computes the attack. On a loaded machine an attacker's
  // round can close before an honest vector comes (its record then names that peer missing),
  // and a share or the leader's vector can miss its wait (its record says coalition_short), so
  // each round is checked against what its records say happened, not against a rate.
  testing::TempDir dir;
  const int rounds = 30;
  const auto run = launch(dir, "coalition",
                          "--kind ring --n 8 --base-port 22600 --metrics-base-port 22700 "
                          "--byzantine-budget 1",
                          "--byzantine 2,6 --attack alie --rounds 30 --set "
                          "byzantine.2.collude=true --set byzantine.6.collude=true");
  expectAllRoundsRun(run, {0, 1, 3, 4, 5, 7}, rounds);
  std::map<int, std::map<int, nlohmann::json>> by_round;  // attacker -> round -> record
  for (const int b : {2, 6}) {
    for (const auto& r : jsonLines(jsonl(run, b))) by_round[b][r["round"].get<int>()] = r;
  }
  int whole[2] = {0, 0};
  for (int t = 0; t < rounds; ++t) {
    if (!by_round[2].contains(t) || !by_round[6].contains(t)) continue;  // joined late
    // The honest vectors the two heard between them this round.
    std::set<int> missed;
    for (const int b : {2, 6}) {
      for (const auto& m : by_round[b][t]["missing"]) missed.insert(m.get<int>());
    }
    const int heard = 4 - int(missed.size());
    for (const int b : {2, 6}) {
      const auto& r = by_round[b][t];
      ASSERT_TRUE(r.contains("attack_known")) << "attacker " << b << " round " << t;
      const bool shortened = r.value("coalition_short", false);
      EXPECT_LE(r["attack_known"].get<int>(), 4);
      if (!shortened) {
        EXPECT_EQ(r["attack_known"].get<int>(), heard) << "attacker " << b << " round " << t;
        ++whole[b == 6];
      }
      // The leader computes every round it knows a vector in; the fellow only when the
      // leader's vector missed it.
      if (b == 2 && r["attack_known"].get<int>() > 0) {
        EXPECT_TRUE(r["attack_computed"].get<bool>()) << "round " << t;
      }
      if (b == 6 && !shortened) {
        EXPECT_FALSE(r["attack_computed"].get<bool>()) << "round " << t;
      }
    }
  }
  // The side channel carried whole rounds over real connections, for both of them.
  EXPECT_GT(whole[0], 0);
  EXPECT_GT(whole[1], 0);
}

TEST(ProtocolCli, RoundLiarMovesNoHonestPeerOnARing) {
  testing::TempDir dir;
  const auto run = launch(dir, "lie",
                          "--kind ring --n 8 --base-port 22400 --metrics-base-port 22500 "
                          "--byzantine-budget 1",
                          "--byzantine 3 --attack round_lie --rounds 60");
  expectAllRoundsRun(run, {0, 1, 2, 4, 5, 6, 7}, 60);
}

TEST(ProtocolCli, EquivocatorIsCaughtByEveryHonestNeighbour) {
  testing::TempDir dir;
  const auto run = launch(dir, "equivocate",
                          "--kind complete --n 8 --base-port 22650 --metrics-base-port 22750 "
                          "--byzantine-budget 2",
                          "--byzantine 7 --attack equivocate:alie --rounds 30");
  expectAllRoundsRun(run, {0, 1, 2, 3, 4, 5, 6}, 30);
  for (int i = 0; i < 7; ++i) {
    int first_mixed = -1, caught_at = -1;
    for (const auto& r : jsonLines(jsonl(run, i))) {
      const int round = r["round"].get<int>();
      if (first_mixed < 0 && has(r, "mixed", 7)) first_mixed = round;
      if (caught_at < 0 && has(r, "equivocators", 7)) caught_at = round;
      for (int honest = 0; honest < 7; ++honest)
        EXPECT_FALSE(has(r, "equivocators", honest)) << "peer " << i;
    }
    ASSERT_GE(caught_at, 0) << "peer " << i << " never caught peer 7";
    if (first_mixed >= 0) {
      EXPECT_LE(caught_at, first_mixed + 2) << "peer " << i;
    }
  }
}

TEST(ProtocolCli, ResyncFloodAndKeyframeSpamCostHonestUplinkLittle) {
  // Top-k 5 % gossip on complete-6 (b = 1); honest bytes sent, relative to the clean run.
  testing::TempDir dir;
  const auto gen = [](int port) {
    return "--kind complete --n 6 --byzantine-budget 1 --base-port " + std::to_string(port) +
           " --metrics-base-port " + std::to_string(port + 100);
  };
  const std::string topk =
      " --rounds 60 --set compression.codec=topk --set compression.density=0.05 "
      "--set compression.gamma=0.2 --set rounds.quorum=false";
  const auto honestBytes = [&](const fs::path& run) {
    double sent = 0;
    for (int i = 0; i < 5; ++i)
      sent += jsonLines(jsonl(run, i)).back()["bytes_sent_total"].get<double>();
    return sent;
  };
  const double clean = honestBytes(launch(dir, "clean", gen(22800), topk));
  const double flood =
      honestBytes(launch(dir, "flood", gen(22820), topk + " --byzantine 5 --attack resync_flood"));
  const double spam =
      honestBytes(launch(dir, "spam", gen(22840), topk + " --byzantine 5 --attack keyframe_spam"));
  std::printf("honest bytes sent vs clean: resync_flood %.2fx, keyframe_spam %.2fx\n",
              flood / clean, spam / clean);
  EXPECT_LT(flood, 1.5 * clean);
  EXPECT_LT(spam, 1.5 * clean);
}

TEST(ProtocolCli, HubOverTcpKeepsEveryModelTheSameAndCountsBothDirections) {
  // exchange: hub on a star of 4 leaves, top-10 % both ways: real processes, one broadcast per
  // round that every peer applies, so the models they write at the end are the same bytes. A
  // leaf waits for the hub every round however loaded the machine (no adaptive deadline, and a
  // minute instead of the smoke config's 2 s, which a busy machine has made a leaf miss).
  testing::TempDir dir;
  const fs::path run =
      launch(dir, "hub",
             "--kind star --n 5 --byzantine-budget 1 --base-port 22860 "
             "--metrics-base-port 22960",
             " --rounds 30 --set rounds.quorum=false --set rounds.deadline_ms=60000 "
             "--set exchange=hub --set compression.codec=topk "
             "--set compression.density=0.1 --set compression.feedback=ef14 "
             "--set compression.broadcast.codec=topk "
             "--set compression.broadcast.density=0.1");
  const auto bytesOf = [](const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string hub_model = bytesOf(run / "node-0.npy");
  ASSERT_FALSE(hub_model.empty());
  for (int leaf = 1; leaf < 5; ++leaf) {
    EXPECT_EQ(bytesOf(run / ("node-" + std::to_string(leaf) + ".npy")), hub_model) << leaf;
    const auto records = jsonLines(jsonl(run, leaf));
    ASSERT_EQ(records.size(), 30u) << leaf;
    for (const auto& r : records) EXPECT_TRUE(has(r, "mixed", 0)) << leaf;
    EXPECT_GT(records.back()["bytes_uplink_total"].get<double>(), 0) << leaf;
  }
  const auto summary = nlohmann::json::parse(bytesOf(run / "summary.json"));
  EXPECT_GT(summary["downlink_dense_bytes"].get<double>(),
            4 * summary["downlink_bytes"].get<double>());
  EXPECT_GT(summary["uplink_bytes"].get<double>(), 0);
}

}  // namespace
}  // namespace phalanx
