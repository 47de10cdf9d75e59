#include "tools/simulation_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "node/config.h"
#include "tools/launch.h"
#include "tools/report.h"
#include "topologies/topology.h"

namespace phalanx::tools {
namespace fs = std::filesystem;

namespace {
// This process's resident set now (Linux /proc/self/statm), in MiB; 0 when unreadable.
double residentMib() {
  std::ifstream statm("/proc/self/statm");
  double pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * double(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}
}  // namespace

net::LinkTable parseLinks(const std::string& text, const std::string& source,
                          net::LinkModel fallback) {
  net::LinkTable table{.fallback = fallback};
  std::istringstream lines(text);
  std::size_t number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::int64_t a = -1, b = -1;
    double latency_ms = 0, rate = 0;
    if (!(words >> a)) continue;
    if (!(words >> b >> latency_ms) || a < 0 || b < 0 || latency_ms <= 0 ||
        (words >> rate && rate < 0)) {
      throw node::ConfigError(
          fmt::format("{}:{}: expected 'A B LATENCY_MS [RATE_MBIT]' with latency > 0, got '{}'",
                      source, number, line));
    }
    table.edges[{std::uint32_t(std::min(a, b)), std::uint32_t(std::max(a, b))}] = {
        .latency = std::chrono::nanoseconds(std::int64_t(latency_ms * 1e6)),
        .megabits_per_second = rate};
  }
  return table;
}

SimulateOutcome runSimulation(const SimulateRequest& r) {
  std::vector<std::string> sets = r.sets;
  for (const std::uint32_t id : r.byzantine)
    sets.push_back(fmt::format("byzantine.{}.attack={}", id, r.attack));
  node::SimulationSetup setup;
  setup.config = node::loadConfig(r.config_file, sets);
  setup.topology =
      std::make_shared<const topologies::Topology>(topologies::loadTopology(r.topology_file));
  for (const std::uint32_t id : r.byzantine) {
    if (!setup.topology->contains(id))
      throw std::invalid_argument(fmt::format("--byzantine: no node {} in the topology", id));
  }
  setup.rounds = r.rounds;
  setup.links = r.links;
  setup.threads = r.threads;
  setup.out = r.out;
  setup.write_models = r.write_models;
  setup.eval_samples = r.eval_samples;
  setup.compute_time = r.compute_time;
  setup.faults = r.faults;
  setup.sample_every_seconds = r.sample_every_seconds;

  std::set<std::uint32_t> byzantine;
  for (const auto& [id, b] : setup.config.byzantine) {
    if (b.attack != "none") byzantine.insert(id);
  }
  fs::create_directories(r.out);
  std::ofstream samples_file(r.out / "monitor.jsonl");
  std::vector<MonitorSample> samples;
  std::vector<std::pair<double, double>> rss;
  setup.on_sample = [&](double seconds,
                        const std::map<std::uint32_t, const node::PeerNode*>& nodes) {
    MonitorSample m{.seconds = seconds, .round = std::numeric_limits<std::uint64_t>::max()};
    std::vector<std::vector<float>> honest;
    double sum = 0, lo = 1e300, hi = -1e300;
    std::size_t evaluated = 0;
    for (const auto& [id, n] : nodes) {
      if (byzantine.contains(id) || (n->finished() && n->openRound() < n->rounds())) continue;
      honest.emplace_back(n->parameters().begin(), n->parameters().end());
      m.round = std::min(m.round, n->openRound());
      const double a = n->metrics().test_accuracy;
      if (!std::isnan(a)) {
        sum += a;
        lo = std::min(lo, a);
        hi = std::max(hi, a);
        ++evaluated;
      }
    }
    if (honest.empty()) return;
    m.consensus_distance = consensusDistance(honest);
    if (evaluated > 0) {
      m.accuracy_min = lo;
      m.accuracy_mean = sum / double(evaluated);
      m.accuracy_max = hi;
    }
    samples.push_back(m);
    samples_file << monitorSampleJson(m) << '\n' << std::flush;
    rss.emplace_back(seconds, residentMib());
  };

  SimulateOutcome out;
  out.result = node::simulate(std::move(setup));
  out.rss_mib = std::move(rss);
  const auto histories = readRunFolder(r.out, byzantine);
  out.summary = summarize(histories, samples, out.result.crashed);
  out.summary.diverged = out.result.diverged;
  const std::string json = summaryJson(out.summary);
  std::ofstream(r.out / "summary.json") << json << '\n';
  std::ofstream(r.out / "report.html") << reportHtml(
      out.summary, samples,
      {.title = fmt::format("phalanx simulation: {}", fs::path(r.config_file).filename().string()),
       .config_text = readTextFile(r.config_file),
       .command = r.command_line,
       .summary_json = json});
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  out.peak_rss_kib = usage.ru_maxrss;
  std::ofstream(r.out / "simulation.json") << simulationJson(out, histories.size()) << '\n';
  return out;
}

std::string simulationJson(const SimulateOutcome& o, std::size_t peers) {
  const auto& s = o.result;
  std::vector<std::string> rss;
  for (const auto& [at, mib] : o.rss_mib) rss.push_back(fmt::format("[{:.3f}, {:.1f}]", at, mib));
  return fmt::format(
      "{{\"peers\": {}, \"threads\": {}, \"peer_rounds\": {}, \"virtual_seconds\": {:.6f}, "
      "\"wall_seconds\": {:.3f}, \"peer_rounds_per_second\": {:.1f}, \"events\": {}, "
      "\"windows\": {}, \"peak_rss_mib\": {:.1f}, \"crashed\": [{}], \"diverged\": [{}], "
      "\"rss_mib\": [{}]}}",
      peers, s.threads, s.peer_rounds, s.virtual_seconds, s.wall_seconds,
      s.wall_seconds > 0 ? double(s.peer_rounds) / s.wall_seconds : 0.0, s.events, s.windows,
      double(o.peak_rss_kib) / 1024.0, fmt::join(s.crashed, ","), fmt::join(s.diverged, ","),
      fmt::join(rss, ", "));
}

}  // namespace phalanx::tools
