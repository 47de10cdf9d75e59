#include "tools/monitor_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "node/config.h"
#include "tools/command.h"
#include "tools/launch.h"
#include "tools/monitor.h"
#include "tools/report.h"
#include "tools/run_analysis.h"
#include "topologies/topology.h"

namespace phalanx::tools {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_stop = 0;
void onStop(int) { g_stop = 1; }

// The report's plots as DIR/NAME.svg, rasterised to DIR/NAME.png by librsvg's rsvg-convert
// (Debian's librsvg2-bin: a few MB and milliseconds, where a browser takes hundreds). False when
// a PNG could not be made (said why); the SVGs are written either way.
bool writePngs(const fs::path& dir, const std::vector<NamedChart>& charts, bool quiet) {
  fs::create_directories(dir);
  const bool rsvg = std::system("command -v rsvg-convert >/dev/null 2>&1") == 0;
  bool ok = rsvg;
  for (const auto& chart : charts) {
    const fs::path svg = dir / (chart.name + ".svg");
    std::ofstream(svg) << chart.svg;
    if (!rsvg) continue;
    const std::string command =
        fmt::format("rsvg-convert --background-color=white -o {} {}",
                    shellQuote((dir / (chart.name + ".png")).string()), shellQuote(svg.string()));
    if (std::system(command.c_str()) != 0) {
      spdlog::error("monitor --png: rsvg-convert failed on {}", svg.string());
      ok = false;
    }
  }
  if (!rsvg) {
    spdlog::error(
        "monitor --png: rsvg-convert is not installed (Debian: librsvg2-bin); wrote the SVGs "
        "only, to {}",
        dir.string());
  } else if (ok && !quiet) {
    fmt::print("plots: {}/*.png\n", dir.string());
  }
  return ok;
}

// A finished launch's folder read back: the peers' JSON lines, the monitor's samples, and
// who was Byzantine or crashed (summary.json, unless `byzantine` names them).
struct Folder {
  RunSummary summary;
  std::vector<MonitorSample> samples;
};
std::optional<Folder> readFolder(const fs::path& dir, const std::string& byzantine_ids) {
  std::set<std::uint32_t> byzantine;
  std::vector<std::uint32_t> crashed;
  if (!byzantine_ids.empty()) byzantine = parseIdList(byzantine_ids);
  {
    std::ifstream in(dir / "summary.json");
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_discarded() && j.is_object()) {
      if (byzantine_ids.empty() && j.contains("byzantine"))
        byzantine = j["byzantine"].get<std::set<std::uint32_t>>();
      if (j.contains("crashed")) crashed = j["crashed"].get<std::vector<std::uint32_t>>();
    }
  }
  const std::vector<PeerHistory> peers = readRunFolder(dir, byzantine);
  if (peers.empty()) return std::nullopt;
  Folder f;
  f.samples = readMonitorSamples(dir / "monitor.jsonl");
  f.summary = summarize(peers, f.samples, crashed);
  return f;
}

// False when an output could not be made (the PNGs).
bool writeOutputs(const MonitorOptions& o, const RunSummary& summary,
                  std::span<const MonitorSample> samples, const std::string& config_text,
                  const std::string& command) {
  const std::string json = summaryJson(summary);
  if (!o.json) fmt::print("{}\n", json);
  if (!o.summary.empty()) std::ofstream(o.summary) << json << '\n';
  std::optional<RunSummary> baseline;
  if (!o.baseline.empty()) {
    if (auto clean = readFolder(o.baseline, "")) {
      baseline = std::move(clean->summary);
    } else {
      spdlog::warn("monitor --baseline {}: no node-K.jsonl files there; no baseline drawn",
                   o.baseline);
    }
  }
  if (!o.report.empty()) {
    std::ofstream(o.report) << reportHtml(summary, samples,
                                          {.title = "phalanx run",
                                           .config_text = config_text,
                                           .command = command,
                                           .summary_json = json,
                                           .baseline = baseline});
    if (!o.json) fmt::print("report: {}\n", o.report);
  }
  bool ok = true;
  nlohmann::ordered_json files = nlohmann::ordered_json::object();
  if (!o.summary.empty()) files["summary"] = o.summary;
  if (!o.report.empty()) files["report"] = o.report;
  if (!o.png.empty()) {
    const auto charts = reportCharts(summary, samples, baseline ? &*baseline : nullptr);
    ok = writePngs(fs::path(o.png), charts, o.json);
    nlohmann::ordered_json pngs = nlohmann::ordered_json::array();
    for (const auto& chart : charts)
      pngs.push_back((fs::path(o.png) / (chart.name + ".png")).string());
    if (ok) files["plots"] = std::move(pngs);
  }
  if (o.json) {
    nlohmann::ordered_json j;
    j["summary"] = nlohmann::json::parse(json);
    j["files"] = std::move(files);
    fmt::print("{}\n", j.dump());
  }
  return ok;
}

int prometheusConfig(const std::string& file) {
  const auto topology = topologies::loadTopology(file);
  fmt::print("# Prometheus scrape configuration for {} (phalanx monitor --prometheus-config)\n",
             file);
  fmt::print(
      "scrape_configs:\n  - job_name: phalanx\n    scrape_interval: 5s\n    static_configs:\n");
  // The scraped node's label is `node`: the metrics carry their own `peer` label (the peer a
  // node excluded, heard or missed), which a target label of that name would rename to
  // exported_peer — and every by-peer panel of tools/deploy/grafana would then rank the scrapers.
  for (const auto& n : topology.nodes()) {
    if (n.metrics_port == 0) continue;
    fmt::print("      - targets: ['{}:{}']\n        labels: {{node: '{}'}}\n", n.host,
               n.metrics_port, n.id);
  }
  return kExitOk;
}

// A finished launch's folder: its summary and report again.
int fromFolder(const MonitorOptions& o) {
  const fs::path dir = o.from;
  const auto folder = readFolder(dir, o.byzantine);
  if (!folder) {
    spdlog::error("monitor --from {}: no node-K.jsonl files there", o.from);
    return kExitBadInput;
  }
  const bool written =
      writeOutputs(o, folder->summary, folder->samples, readTextFile(dir / "config.yaml"),
                   readTextFile(dir / "command.txt"));
  return written ? kExitOk : kExitFailure;
}

int live(const MonitorOptions& o) {
  auto topology =
      std::make_shared<const topologies::Topology>(topologies::loadTopology(o.topology));
  const std::set<std::uint32_t> byzantine = parseIdList(o.byzantine);
  std::string token = o.token;
  if (token.empty() && !o.token_file.empty())
    token = node::controlToken({.token_file = o.token_file});
  if (token.empty() && !o.config.empty())
    token = node::controlToken(node::loadConfig(o.config).control);
  Monitor monitor(topology, byzantine, token);
  std::signal(SIGINT, onStop);
  std::signal(SIGTERM, onStop);
  std::vector<MonitorSample> samples;
  std::set<std::uint32_t> seen_up, crashed;
  // Under --json stdout carries the one result object: the table is for people, on stderr.
  std::FILE* screen = o.json ? stderr : stdout;
  const bool tty = isatty(fileno(screen));
  const auto started = Clock::now();
  while (!g_stop) {
    monitor.scrape();
    const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
    samples.push_back(monitor.sample(elapsed));
    bool any_up = false;
    for (const auto& p : monitor.peers()) {
      if (p.up) seen_up.insert(p.id);
      if (!p.up && seen_up.contains(p.id)) crashed.insert(p.id);  // answered once, gone now
      any_up |= p.up;
    }
    fmt::print(screen, "{}{}", tty ? "\x1b[H\x1b[J" : "\n", monitor.table(elapsed));
    std::fflush(screen);
    if ((!any_up && !seen_up.empty()) || (o.duration > 0 && elapsed >= o.duration)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::int64_t(o.every * 1000)));
  }
  const RunSummary summary =
      summarizeLive(monitor.figures(), samples,
                    std::vector<std::uint32_t>(crashed.begin(), crashed.end()), byzantine);
  const bool written =
      writeOutputs(o, summary, samples, o.config.empty() ? "" : readTextFile(o.config),
                   "phalanx monitor --topology " + o.topology);
  return written ? kExitOk : kExitFailure;
}

}  // namespace

int runMonitor(const MonitorOptions& o) {
  try {
    if (!o.prometheus_config.empty()) return prometheusConfig(o.prometheus_config);
    if (!o.from.empty()) return fromFolder(o);
    if (o.topology.empty()) {
      spdlog::error(
          "monitor: --topology is required (or --from DIR, or --prometheus-config T.yaml)");
      return kExitBadInput;
    }
    return live(o);
  } catch (const base::Error& e) {
    spdlog::error("{}", e.what());
    return exitCodeOf(e);
  } catch (const std::invalid_argument& e) {
    spdlog::error("monitor: {}", e.what());
    return kExitBadInput;
  }
}

}  // namespace phalanx::tools
