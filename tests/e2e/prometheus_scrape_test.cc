// The Grafana dashboard against a real Prometheus (ctest label prometheus): a four-peer cluster
// with one signflip peer, scraped by Debian's `prometheus` through the configuration `phalanx
// monitor --prometheus-config` prints; every by-peer query of tools/deploy/grafana/phalanx.json
// is evaluated by Prometheus itself and checked against the peers' jsonl records. Skipped, saying
// why, when the prometheus binary is missing (tools/install-deps installs it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tests/support/json_files.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace phalanx {
namespace {

using namespace std::chrono_literals;
using testing::jsonFile;
using testing::jsonLines;
using testing::phalanxBinary;
using testing::readFile;
using testing::runProcess;
using testing::sourceDir;
using testing::waitFor;
namespace fs = std::filesystem;

constexpr int kPrometheusPort = 9491;
constexpr std::uint32_t kAttacker = 3;

// One instant query's result: the series' labels and value.
struct Series {
  std::map<std::string, std::string> labels;
  double value = 0;
};

class PrometheusScrape : public ::testing::Test {
 protected:
  void SetUp() override {
    if (runProcess("command -v prometheus").exit_code != 0)
      GTEST_SKIP() << "needs prometheus (Debian's package; tools/install-deps installs it)";
  }

  void TearDown() override {
    for (const char* pid : {"launch.pid", "prometheus.pid"}) {
      if (fs::exists(dir_.path() / pid))
        runProcess("kill $(cat " + (dir_.path() / pid).string() + ")");
    }
    if (launch_.joinable()) launch_.join();
  }

  // Evaluates `query` at `time` (seconds since the epoch) through the HTTP API; an error fails
  // the test unless `polling` (Prometheus may still be starting).
  std::vector<Series> query(const std::string& expr, double time, bool polling = false) {
    httplib::Client client("127.0.0.1", kPrometheusPort);
    client.set_read_timeout(10s);
    const auto r =
        client.Get("/api/v1/query", httplib::Params{{"query", expr}, {"time", decimal(time)}},
                   httplib::Headers{});
    if (!polling) {
      EXPECT_TRUE(r && r->status == 200) << expr << ": " << (r ? r->body : "no answer");
    }
    if (!r || r->status != 200) return {};
    const auto j = nlohmann::json::parse(r->body);
    std::vector<Series> out;
    for (const auto& s : j.at("data").at("result")) {
      Series series;
      for (const auto& [k, v] : s.at("metric").items()) series.labels[k] = v.get<std::string>();
      series.value = std::stod(s.at("value").at(1).get<std::string>());
      out.push_back(series);
    }
    return out;
  }

  static std::string decimal(double t) {
    std::ostringstream s;
    s.precision(15);
    s << t;
    return s.str();
  }

  testing::TempDir dir_;
  std::thread launch_;
};

// The exclusion panels rank the signflip peer first, every honest peer below it, and the raw
// counters Prometheus stored equal what each peer's jsonl records say up to the round that
// peer had published when it was scraped.
TEST_F(PrometheusScrape, GrafanaByPeerQueriesMatchTheJsonlAndRankTheAttackerFirst) {
  const fs::path d = dir_.path();
  const fs::path topology = d / "complete-4.yaml";
  ASSERT_TRUE(testing::generateTopology(
      topology,
      "--kind complete --n 4 --base-port 7870 --metrics-base-port 8270 --byzantine-budget 1"));
  auto scrape =
      runProcess("(" + phalanxBinary() + " monitor --prometheus-config " + topology.string() + ")");
  ASSERT_EQ(scrape.exit_code, 0) << scrape.output;
  // Every second, not every five: the test needs a few scrapes, not a minute of them.
  const std::string every5 = "scrape_interval: 5s";
  const auto at = scrape.output.find(every5);
  ASSERT_NE(at, std::string::npos) << scrape.output;
  scrape.output.replace(at, every5.size(), "scrape_interval: 1s");
  std::ofstream(d / "prometheus.yml") << scrape.output;
  const auto check = runProcess("promtool check config " + (d / "prometheus.yml").string());
  EXPECT_EQ(check.exit_code, 0) << check.output;

  const auto started = runProcess(
      "prometheus --config.file=" + (d / "prometheus.yml").string() +
      " --storage.tsdb.path=" + (d / "tsdb").string() +
      " --web.listen-address=127.0.0.1:" + std::to_string(kPrometheusPort) + " > " +
      (d / "prometheus.log").string() + " 2>&1 & echo $! > " + (d / "prometheus.pid").string());
  ASSERT_EQ(started.exit_code, 0) << started.output;

  // Far more rounds than the test needs: it stops the cluster with SIGTERM once Prometheus has
  // what it checks, so a slow machine only makes the run longer, never the scrapes too few.
  const fs::path out = d / "run";
  launch_ = std::thread([&] {
    runProcess("echo $$ > " + (d / "launch.pid").string() + "; exec " + phalanxBinary() +
               " launch --topology " + topology.string() + " --config " + sourceDir() +
               "/configs/monna-fmnist.yaml --byzantine 3 --attack signflip --rounds 100000 "
               "--set rounds.eval_every=50 --out " +
               out.string() + " > " + (d / "launch.log").string() + " 2>&1");
  });

  // Ten scrapes of every peer with rounds behind them; Prometheus's clock at that moment is the
  // time every query below is evaluated at, so they all read the same samples.
  double now = 0;
  const bool scraped = waitFor(
      [&] {
        const double t =
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        const auto r =
            query("min(count_over_time(phalanx_round[1m]) and (phalanx_round > 20))", t, true);
        const auto n = query("count(phalanx_round > 20)", t, true);
        if (r.size() != 1 || n.size() != 1 || n[0].value < 4 || r[0].value < 10) return false;
        now = t;
        return true;
      },
      180s);
  ASSERT_TRUE(scraped) << readFile(d / "prometheus.log") << readFile(d / "launch.log");

  // Every by-peer panel of the dashboard, as Grafana would send it.
  const auto dashboard = jsonFile(fs::path(sourceDir()) / "tools/deploy/grafana/phalanx.json");
  std::size_t by_peer = 0;
  for (const auto& panel : dashboard.at("panels")) {
    if (!panel.contains("targets")) continue;
    for (const auto& target : panel.at("targets")) {
      const std::string expr = target.at("expr");
      if (expr.find("by (peer)") == std::string::npos) continue;
      ++by_peer;
      SCOPED_TRACE(expr);
      const auto result = query(expr, now);
      std::map<std::uint32_t, double> value;
      for (const auto& s : result) {
        ASSERT_TRUE(s.labels.contains("peer"));
        value[static_cast<std::uint32_t>(std::stoul(s.labels.at("peer")))] = s.value;
      }
      // Deadline misses have no attacker to rank (signflip answers on time): counted below.
      if (expr.find("deadline") != std::string::npos) continue;
      ASSERT_EQ(value.size(), 4u);
      for (std::uint32_t p = 0; p < kAttacker; ++p) EXPECT_LT(value.at(p), value.at(kAttacker));
    }
  }
  EXPECT_EQ(by_peer, 4u) << "a by-peer panel was added or removed: check it here";

  // The raw counters, one series per (scraped node, peer), against the records.
  std::map<std::uint32_t, std::uint64_t> rounds;
  for (const auto& s : query("phalanx_round", now)) {
    rounds[static_cast<std::uint32_t>(std::stoul(s.labels.at("node")))] =
        static_cast<std::uint64_t>(s.value);
  }
  ASSERT_EQ(rounds.size(), 4u);
  const auto series = [&](const std::string& name) {
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> v;
    for (const auto& s : query(name, now)) {
      v[{static_cast<std::uint32_t>(std::stoul(s.labels.at("node"))),
         static_cast<std::uint32_t>(std::stoul(s.labels.at("peer")))}] =
          static_cast<std::uint64_t>(s.value);
    }
    return v;
  };
  const auto excluded = series("phalanx_peer_excluded_total");
  const auto heard = series("phalanx_peer_heard_total");
  const auto misses = series("phalanx_deadline_misses_total");

  runProcess("kill $(cat " + (d / "launch.pid").string() + ")");
  launch_.join();
  fs::remove(d / "launch.pid");

  std::uint64_t attacker_excluded = 0;
  for (std::uint32_t node = 0; node < kAttacker; ++node) {  // the honest peers' own records
    SCOPED_TRACE("node " + std::to_string(node));
    std::map<std::uint32_t, std::uint64_t> want_excluded, want_heard, want_missing;
    for (const auto& r : jsonLines(out / ("node-" + std::to_string(node) + ".jsonl"))) {
      if (r.at("round").get<std::uint64_t>() >= rounds.at(node)) break;
      for (const auto& p : r.at("excluded")) ++want_excluded[p.get<std::uint32_t>()];
      for (const auto& p : r.at("mixed")) ++want_heard[p.get<std::uint32_t>()];
      for (const auto& p : r.at("missing")) ++want_missing[p.get<std::uint32_t>()];
    }
    for (std::uint32_t peer = 0; peer < 4; ++peer) {
      if (peer == node) continue;
      const auto get = [&](const auto& m) {
        const auto it = m.find({node, peer});
        return it == m.end() ? std::uint64_t{0} : it->second;
      };
      const auto want = [&](const auto& m) {
        const auto it = m.find(peer);
        return it == m.end() ? std::uint64_t{0} : it->second;
      };
      EXPECT_EQ(get(excluded), want(want_excluded)) << "peer " << peer;
      EXPECT_EQ(get(heard), want(want_heard)) << "peer " << peer;
      // A miss is a neighbour whose message had not come when the round closed; `missing` also
      // holds one whose message came but was not mixed (undecodable against the replica).
      EXPECT_LE(get(misses), want(want_missing)) << "peer " << peer;
    }
    attacker_excluded += want_excluded[kAttacker];
  }
  EXPECT_GT(attacker_excluded, 0u);
}

}  // namespace
}  // namespace phalanx
