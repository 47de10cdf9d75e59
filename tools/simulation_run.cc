#include "tools/simulation_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>

#include "node/config.h"
#include "tools/launch.h"
#include "tools/report.h"
#include "topologies/topology.h"

// jemalloc's control call, where the executable links jemalloc (tools/CMakeLists.txt); null
// otherwise (the tests, a build without it).
extern "C" int mallctl(const char* name, void* old, std::size_t* old_size, void* value,
                       std::size_t size) __attribute__((weak));

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

SimulateOutcome runSimulation(const SimulateRequest& r) {
  node::SimulationSetup setup;
  setup.topology =
      std::make_shared<const topologies::Topology>(topologies::loadTopology(r.topology_file));
  std::vector<std::string> sets = r.sets;
  const std::set<std::uint32_t> attackers = parseIdList(r.byzantine);
  for (std::string& set : byzantineSets(attackers, r.attack, *setup.topology)) {
    sets.push_back(std::move(set));
  }
  setup.config = node::loadConfig(r.config_file, sets);
  const net::LinkModel every_link{
      .latency = std::chrono::nanoseconds(std::int64_t(r.latency_ms * 1e6)),
      .megabits_per_second = r.rate_mbit};
  if (r.links_file.empty()) {
    setup.links.fallback = every_link;
  } else {
    setup.links = node::parseLinks(readTextFile(r.links_file), r.links_file, every_link);
  }
  node::addTopologyRegions(setup.links, *setup.topology,
                           r.links_file.empty() ? r.topology_file : r.links_file);
  if (!r.faults_file.empty())
    setup.faults = node::parseFaults(readTextFile(r.faults_file), r.faults_file);
  if (r.chaos > 0) {
    std::vector<std::uint32_t> honest;
    for (const auto& n : setup.topology->nodes()) {
      if (!attackers.contains(n.id)) honest.push_back(n.id);
    }
    const auto chaos =
        node::chaosFaults(*setup.topology, honest, r.chaos, r.chaos_seconds, setup.config.seed);
    setup.faults.insert(setup.faults.end(), chaos.begin(), chaos.end());
  }
  setup.rounds = r.rounds;
  setup.threads = r.threads;
  setup.out = r.out;
  setup.write_models = r.write_models;
  setup.eval_samples = r.eval_samples;
  setup.floor_steps = r.floor_steps;
  setup.hash_every_vector = r.hash_every_vector;
  setup.compute_time = std::chrono::microseconds(std::int64_t(r.compute_ms * 1000));
  setup.sample_every_seconds = r.sample_every_seconds;
  const fs::path out_dir = r.out;

  std::set<std::uint32_t> byzantine;
  for (const auto& [id, b] : setup.config.byzantine) {
    if (!b.attack.honest()) byzantine.insert(id);
  }
  fs::create_directories(out_dir);
  std::ofstream samples_file(out_dir / "monitor.jsonl");
  std::vector<MonitorSample> samples;
  std::vector<std::pair<double, double>> rss;
  setup.on_sample = [&](double seconds,
                        const std::map<std::uint32_t, const node::PeerNode*>& nodes) {
    MonitorSample m{.seconds = seconds, .round = std::numeric_limits<std::uint64_t>::max()};
    // Read in place: the sample runs between the scheduler's windows, no peer moving (a copy of
    // every model would cost as much memory again as the models at 10,000 peers).
    std::vector<std::span<const float>> honest;
    std::vector<double> accuracies;
    for (const auto& [id, n] : nodes) {
      if (byzantine.contains(id) || (n->finished() && n->openRound() < n->rounds())) continue;
      honest.push_back(n->parameters());
      m.round = std::min(m.round, n->openRound());
      accuracies.push_back(n->metrics().test_accuracy);
    }
    if (honest.empty()) return;
    m.consensus_distance = consensusDistance(honest);
    const Spread accuracy = spreadOf(accuracies);
    m.accuracy_min = accuracy.min;
    m.accuracy_mean = accuracy.mean;
    m.accuracy_max = accuracy.max;
    samples.push_back(m);
    samples_file << monitorSampleJson(m) << '\n' << std::flush;
    rss.emplace_back(seconds, residentMib());
  };

  // The progress line: peer-rounds counted on the nodes' threads, drawn by whichever thread
  // finds half a second has passed since the last drawing.
  std::atomic<std::uint64_t> done{0};
  std::mutex drawing;
  const auto started = std::chrono::steady_clock::now();
  auto last_drawn = started;
  const std::uint64_t total =
      std::uint64_t(setup.topology->size()) * (r.rounds ? r.rounds : setup.config.rounds.count);
  const auto draw = [&](bool last) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const double rate = seconds > 0 ? double(done) / seconds : 0;
    const double left = rate > 0 && total > done ? double(total - done) / rate : 0;
    std::fprintf(stderr, "\rsimulate: %llu/%llu peer-rounds (%.0f%%), %.0f peer-rounds/s, %s%s",
                 static_cast<unsigned long long>(done.load()),
                 static_cast<unsigned long long>(total),
                 total ? 100.0 * double(done) / double(total) : 100.0, rate,
                 last ? fmt::format("{:.1f} s", seconds).c_str()
                      : fmt::format("ETA {:.0f} s  ", left).c_str(),
                 last ? "\n" : "");
  };
  if (r.progress) {
    setup.on_round = [&](std::uint32_t, const node::RoundRecord&) {
      ++done;
      const auto now = std::chrono::steady_clock::now();
      std::unique_lock lock(drawing, std::try_to_lock);
      if (!lock || now - last_drawn < std::chrono::milliseconds(500)) return;
      last_drawn = now;
      draw(false);
    };
  }

  SimulateOutcome out;
  out.result = node::simulate(std::move(setup));
  // The peers are gone, but their memory stays with the worker threads' malloc arenas, where
  // the summary below (read on this thread) cannot reuse it: at 10,000 peers reading every
  // record on top of it was what pushed the process past the machine's memory. jemalloc (the
  // executable's allocator where it is installed) holds freed pages for seconds before it
  // returns them: it is told to now.
  if (mallctl != nullptr) {
    mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);  // 4096: MALLCTL_ARENAS_ALL
  }
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  if (r.progress) draw(true);
  out.rss_mib = std::move(rss);
  out.summary = summarize(readRunFolder(out_dir, byzantine), samples, out.result.crashed);
  out.summary.diverged = out.result.diverged;
  out.summary_json = writeRunResults(
      out_dir, out.summary, samples,
      {.title = fmt::format("phalanx simulation: {}", fs::path(r.config_file).filename().string()),
       .config_text = readTextFile(r.config_file),
       .command = r.command_line});
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  out.peak_rss_kib = usage.ru_maxrss;
  std::ofstream(out_dir / "simulation.json") << simulationObject(out).dump() << '\n';
  return out;
}

nlohmann::ordered_json simulationObject(const SimulateOutcome& o) {
  const auto& s = o.result;
  // Figures to the digits that mean something (timers, rates), not to double precision.
  const auto digits = [](double v, int places) {
    const double scale = std::pow(10.0, places);
    return std::round(v * scale) / scale;
  };
  const double rate = s.wall_seconds > 0 ? double(s.peer_rounds) / s.wall_seconds : 0.0;
  nlohmann::ordered_json j{{"peers", s.peers},
                           {"threads", s.threads},
                           {"peer_rounds", s.peer_rounds},
                           {"virtual_seconds", digits(s.virtual_seconds, 6)},
                           {"wall_seconds", digits(s.wall_seconds, 3)},
                           {"rounds_wall_seconds", digits(s.rounds_wall_seconds, 3)},
                           {"rounds_cpu_seconds", digits(s.rounds_cpu_seconds, 3)},
                           {"peer_rounds_per_second", digits(rate, 1)},
                           {"events", s.events},
                           {"digests_hashed", s.digests_hashed},
                           {"digests_compared", s.digests_compared},
                           {"every_vector_hashed", s.every_vector_hashed},
                           {"windows", s.windows}};
  if (s.floor) {
    // The rounds' own rate (no loading, no building) against local steps alone.
    const double rounds_rate =
        s.rounds_wall_seconds > 0 ? double(s.peer_rounds) / s.rounds_wall_seconds : 0.0;
    j["floor"] = {{"learners", s.floor->learners},
                  {"steps", s.floor->steps},
                  {"wall_seconds", digits(s.floor->wall_seconds, 3)},
                  {"steps_per_second", digits(s.floor->steps_per_second, 1)},
                  {"peer_rounds_per_second", digits(s.floor->peer_rounds_per_second, 1)}};
    j["rounds_peer_rounds_per_second"] = digits(rounds_rate, 1);
    j["share_of_floor"] = digits(
        s.floor->peer_rounds_per_second > 0 ? rounds_rate / s.floor->peer_rounds_per_second : 0.0,
        4);
  }
  j["peak_rss_mib"] = digits(double(o.peak_rss_kib) / 1024.0, 1);
  j["crashed"] = s.crashed;
  j["diverged"] = s.diverged;
  nlohmann::ordered_json rss = nlohmann::ordered_json::array();
  for (const auto& [at, mib] : o.rss_mib) rss.push_back({digits(at, 3), digits(mib, 1)});
  j["rss_mib"] = std::move(rss);
  return j;
}

}  // namespace phalanx::tools
