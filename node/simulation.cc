#include "node/simulation.h"

#include <fmt/format.h>
#include <omp.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <sstream>

#include "base/log_format.h"
#include "base/text.h"
#include "node/npy.h"
#include "train/local_trainer.h"

namespace phalanx::node {
namespace {

namespace fs = std::filesystem;
using Seconds = std::chrono::duration<double>;

net::Clock::TimePoint atSeconds(double s) {
  return net::Clock::TimePoint(
      std::chrono::duration_cast<net::Clock::TimePoint::duration>(Seconds(std::max(0.0, s))));
}

double secondsOf(net::Clock::TimePoint t) { return Seconds(t.time_since_epoch()).count(); }

// Every thread's CPU time so far, user and system.
double processCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// One peer slot: the node now and its JSON lines not yet written.
struct Slot {
  std::uint32_t id = 0, actor = 0;
  std::unique_ptr<PeerNode> node;
  std::string pending_lines;
  fs::path jsonl;
  std::uint64_t rounds = 0;
  bool done = false;

  void flush() {
    if (pending_lines.empty() || jsonl.empty()) return;
    std::ofstream(jsonl, std::ios::app) << pending_lines;
    pending_lines.clear();
  }
};

}  // namespace

namespace {

// The simulation's text inputs (fault and link files): each line without its '#' comment,
// blank ones skipped, as a word stream with its 1-based number and text.
void forEachLine(
    const std::string& text,
    const std::function<void(std::size_t, std::istringstream&, const std::string&)>& each) {
  std::istringstream lines(text);
  std::size_t number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    if ((words >> std::ws).eof()) continue;
    each(number, words, line);
  }
}

}  // namespace

std::vector<SimulatedFault> parseFaults(const std::string& text, const std::string& source) {
  std::vector<SimulatedFault> out;
  forEachLine(text, [&](std::size_t number, std::istringstream& words, const std::string& line) {
    SimulatedFault f;
    std::int64_t node = -1;
    if (!(words >> f.at_seconds >> node) || f.at_seconds < 0 || node < 0 ||
        node > std::int64_t(0xffffffff)) {
      throw ConfigError(
          fmt::format("{}:{}: expected 'SECONDS NODE COMMAND', got '{}'", source, number, line));
    }
    f.node = std::uint32_t(node);
    std::string command;
    std::getline(words >> std::ws, command);
    if ((std::istringstream(command) >> std::ws).eof())
      throw ConfigError(fmt::format("{}:{}: no command after the node id", source, number));
    auto parsed = parseFaultCommand(command);
    if (!parsed) throw ConfigError(fmt::format("{}:{}: {}", source, number, parsed.error()));
    f.command = std::move(*parsed);
    out.push_back(std::move(f));
  });
  return out;
}

void addTopologyRegions(net::LinkTable& links, const topologies::Topology& topology,
                        const std::string& source) {
  for (const auto& n : topology.nodes()) {
    if (n.region.empty()) continue;
    const auto [it, added] = links.region_of.emplace(n.id, n.region);
    if (!added && it->second != n.region) {
      throw ConfigError(fmt::format("{}: node {} is in region {} there but in {} in the topology",
                                    source, n.id, it->second, n.region));
    }
  }
}

net::LinkTable parseLinks(const std::string& text, const std::string& source,
                          net::LinkModel fallback) {
  net::LinkTable table{.fallback = fallback};
  forEachLine(text, [&](std::size_t number, std::istringstream& words, const std::string& line) {
    const auto bad = [&](const char* expected) {
      throw ConfigError(
          fmt::format("{}:{}: expected {}, got '{}'", source, number, expected, line));
    };
    // LATENCY_MS [RATE_MBIT [JITTER_MS [LOSS]]] from the rest of the line.
    const auto model = [&](const char* expected) {
      double values[4] = {0, 0, 0, 0};  // latency, rate, jitter, loss
      std::size_t given = 0;
      for (std::string word; words >> word; ++given) {
        std::size_t used = 0;
        try {
          if (given < 4) values[given] = std::stod(word, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (given >= 4 || used != word.size()) bad(expected);
      }
      const double latency_ms = values[0], rate = values[1], jitter_ms = values[2],
                   loss = values[3];
      if (given == 0 || !(latency_ms > 0) || !(rate >= 0) || !(jitter_ms >= 0) ||
          !(jitter_ms < latency_ms) || !(loss >= 0) || !(loss < 1)) {
        bad(expected);
      }
      return net::LinkModel{.latency = std::chrono::nanoseconds(std::int64_t(latency_ms * 1e6)),
                            .megabits_per_second = rate,
                            .jitter = std::chrono::nanoseconds(std::int64_t(jitter_ms * 1e6)),
                            .loss = loss};
    };
    constexpr const char* kLink =
        "'A B LATENCY_MS [RATE_MBIT [JITTER_MS [LOSS]]]' (latency > jitter >= 0, 0 <= loss < 1)";
    std::string first;
    words >> first;
    if (first == "region") {
      std::string name, ids;
      if (!(words >> name >> ids)) bad("'region NAME IDS' (e.g. region eu 0-15)");
      const auto parsed = base::parseIds(ids);
      if (!parsed) bad("'region NAME IDS' (e.g. region eu 0-15)");
      for (const std::uint32_t id : *parsed) {
        if (!table.region_of.emplace(id, name).second) {
          throw ConfigError(fmt::format("{}:{}: node {} is already in region {}", source, number,
                                        id, table.region_of.at(id)));
        }
      }
      return;
    }
    if (first == "within" || first == "across") {
      (first == "within" ? table.within : table.across) =
          model("'within|across LATENCY_MS [RATE_MBIT [JITTER_MS [LOSS]]]'");
      return;
    }
    std::int64_t a = -1, b = -1;
    std::istringstream head(first);
    if (!(head >> a) || !head.eof() || !(words >> b) || a < 0 || b < 0 ||
        a > std::int64_t(0xffffffff) || b > std::int64_t(0xffffffff)) {
      bad(kLink);
    }
    table.edges[{std::uint32_t(std::min(a, b)), std::uint32_t(std::max(a, b))}] = model(kLink);
  });
  return table;
}

std::vector<SimulatedFault> chaosFaults(const topologies::Topology& topology,
                                        std::span<const std::uint32_t> nodes, std::size_t count,
                                        double span_seconds, std::uint64_t seed) {
  std::vector<SimulatedFault> out;
  if (nodes.empty()) return out;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> when(0, span_seconds), gap(0.05, 0.3);
  std::uniform_int_distribution<std::size_t> pick(0, nodes.size() - 1);
  for (std::size_t k = 0; k < count; ++k) {
    const double at = when(rng), until = at + gap(rng);
    const std::uint32_t node = nodes[pick(rng)];
    switch (rng() % 3) {
      case 0:
        out.push_back({at, node, fault::Crash{}});
        out.push_back({until, node, fault::Restart{}});
        break;
      case 1: {
        const auto& ns = topology.neighbours(node);
        if (ns.empty()) break;
        out.push_back({at, node, fault::Partition{{ns[rng() % ns.size()]}}});
        out.push_back({until, node, fault::Heal{}});
        break;
      }
      default:
        out.push_back({at, node,
                       fault::SwitchAttack{
                           {.kind = Misbehaviour::kVector, .vector = robust::AttackId::kAlie}}});
        out.push_back({until, node, fault::SwitchAttack{}});
        break;
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.at_seconds < b.at_seconds; });
  return out;
}

SimulationResult simulate(SimulationSetup s) {
  const auto wall_start = std::chrono::steady_clock::now();
  if (!s.topology) throw ConfigError("simulate: no topology");
  const topologies::Topology& topology = *s.topology;
  const std::size_t n = topology.size();
  // One thread per actor turn: the nodes' own OpenMP and Eigen parallelism would oversubscribe.
  s.config.threads = 1;
  train::useThreads(1);

  SimulationResult result;
  result.peers = n;
  for (const auto& [id, b] : s.config.byzantine) {
    if (!topology.contains(id))
      throw ConfigError(fmt::format("byzantine: no node {} in the topology", id));
    if (!b.attack.honest()) result.byzantine.insert(id);
  }
  for (const auto& [id, attack] : s.attacks) {
    if (!topology.contains(id))
      throw ConfigError(fmt::format("attack: no node {} in the topology", id));
    if (!attack.honest()) result.byzantine.insert(id);
  }
  bool restarts = false;
  for (const auto& f : s.faults) {
    if (!topology.contains(f.node))
      throw ConfigError(
          fmt::format("fault at {} s: no node {} in the topology", f.at_seconds, f.node));
    restarts |= std::holds_alternative<fault::Restart>(f.command);
  }

  std::shared_ptr<spdlog::logger> log = s.log;
  spdlog::sink_ptr sink;
  if (!s.out.empty()) {
    fs::create_directories(s.out);
    if (!log) {
      sink =
          std::make_shared<spdlog::sinks::basic_file_sink_mt>((s.out / "simulation.log").string(),
                                                              /*truncate=*/true);
    }
  }
  if (!sink) sink = std::make_shared<spdlog::sinks::null_sink_mt>();
  const auto loggerFor = [&](std::uint32_t id) {
    if (log) return log;
    auto l = std::make_shared<spdlog::logger>(fmt::format("node-{}", id), sink);
    l->set_pattern(base::kLogPattern);
    l->set_level(spdlog::get_level());
    return l;
  };

  const RunData run = loadRunData(s.config, n);
  train::Dataset test = run.data.test;
  if (s.eval_samples > 0 && s.eval_samples < test.size()) {
    test.y.resize(s.eval_samples);
    test.x.resize(s.eval_samples * test.features);
  }
  const auto shared_test = std::make_shared<const train::Dataset>(std::move(test));

  std::map<std::uint32_t, std::uint32_t> actor_of;
  for (std::uint32_t i = 0; i < n; ++i) actor_of[topology.nodes()[i].id] = i;
  // Each worker runs one actor at a time on one core (Eigen's thread count is global: set above).
  net::VirtualScheduler scheduler(n, s.links.minLatency(), s.threads,
                                  [] { omp_set_num_threads(1); });
  net::MemoryNetwork network(scheduler, actor_of, s.links);
  // After the network: the nodes (and their endpoints in it) go first.
  std::vector<Slot> slots(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    slots[i].id = topology.nodes()[i].id;
    slots[i].actor = i;
    if (!s.out.empty()) {
      slots[i].jsonl = s.out / fmt::format("node-{}.jsonl", slots[i].id);
      fs::remove(slots[i].jsonl);
    }
  }
  result.threads = scheduler.threads();
  const bool checkpoints = restarts || s.config.checkpoint.every > 0;
  if (restarts && s.config.checkpoint.every == 0) s.config.checkpoint.every = 10;
  const fs::path checkpoint_root =
      s.out.empty() ? fs::temp_directory_path() / fmt::format("phalanx-sim-{}", ::getpid())
                    : s.out / "checkpoints";
  fs::remove_all(checkpoint_root);  // a fresh run: no restart may resume an older run's state

  // Every peer's statement key (docs/PROTOCOL.md "Equivocation"), made once: a restarted peer
  // keeps its own. The simulated network authenticates its peers whatever security.mode says.
  std::vector<std::shared_ptr<const net::SigningKey>> signing(n);
  auto keys = std::make_shared<net::KeyRing>();
  if (s.config.security.statements) {
    for (std::uint32_t i = 0; i < n; ++i) {
      signing[i] = std::make_shared<const net::SigningKey>(net::SigningKey::generate());
      (*keys)[slots[i].id] = signing[i]->publicKey();
    }
  }

  // A round's vectors are hashed once, by their senders; each receiver compares bytes
  // (net/digest_memo.h). A round's worth and a quarter more (the receivers of one round run in
  // the windows after its senders, before the next round's vectors push it out), at most 1 GiB.
  const auto digest_memo = s.config.security.statements && !s.hash_every_vector
                               ? std::make_shared<net::DigestMemo>(n + n / 4)
                               : nullptr;

  const auto detours = std::make_shared<const topologies::DetourLengths>(*s.topology);

  // mixing.step: auto is one eigenvalue problem for the run, not one per peer.
  const std::set<std::uint32_t> declared = declaredByzantine(result.byzantine, s.config);
  const Config config = withResolvedStep(s.config, topology, declared);
  if (!s.config.mixing.step) {
    loggerFor(slots.empty() ? 0 : slots[0].id)
        ->info(
            "mixing.step: auto is {:.6f} (1/lambda_max of the honest Laplacian, {} Byzantine "
            "ids left out)",
            *config.mixing.step, declared.size());
  }
  const auto start = [&](Slot& slot, bool resume) {
    PeerSetup setup{
        .config = config,
        .topology = s.topology,
        .id = slot.id,
        .test = shared_test,
        .attack = s.attacks.contains(slot.id) ? std::optional<AttackSpec>(s.attacks.at(slot.id))
                                              : std::nullopt,
        .rounds = s.rounds,
        .checkpoint_dir =
            checkpoints ? checkpoint_root / fmt::format("node-{}", slot.id) : fs::path(),
        .resume = resume,
        .compute_time = s.compute_time,
        .log = loggerFor(slot.id),
        .signing_key = signing[slot.actor],
        .keys = keys,
        .digest_memo = digest_memo,
        .detours = detours,
        .byzantine = result.byzantine};
    giveShard(setup, run, slot.actor);
    // The crashed incarnation goes first: its timers and posted work are guarded, and its
    // endpoint must be gone before the new one takes the id.
    slot.node.reset();
    slot.done = false;
    slot.node =
        std::make_unique<PeerNode>(scheduler.clock(slot.actor), std::move(setup),
                                   [&network](net::TransportConfig c, net::TransportHandlers h) {
                                     return network.transport(std::move(c), std::move(h));
                                   });
    slot.node->connect();
    slot.node->start(
        [&s, &slot](const RoundRecord& r) {
          ++slot.rounds;
          slot.pending_lines += roundRecordJson(slot.id, r);
          slot.pending_lines += '\n';
          if (slot.pending_lines.size() > (64u << 10)) slot.flush();
          if (s.on_round) s.on_round(slot.id, r);
        },
        [&slot] { slot.done = true; });
  };
  for (auto& slot : slots) start(slot, false);

  // Faults not yet applied: the run ends when every node has stopped and none is left.
  std::atomic<std::size_t> faults_left = s.faults.size();
  for (const auto& f : s.faults) {
    Slot& slot = slots[actor_of.at(f.node)];
    scheduler.schedule(net::VirtualScheduler::kOutside, slot.actor, atSeconds(f.at_seconds),
                       [&slot, &start, &faults_left, f] {
                         --faults_left;
                         if (std::holds_alternative<fault::Restart>(f.command)) {
                           // Only a node that is down restarts (a crash before it, or none).
                           if (slot.node->finished() && !slot.done) start(slot, true);
                           return;
                         }
                         if (slot.node->finished()) return;
                         if (auto applied = slot.node->inject(f.command); !applied) {
                           spdlog::warn("fault at {} s on node {}: {}", f.at_seconds, f.node,
                                        applied.error());
                         }
                       });
  }

  const auto sample = [&] {
    if (!s.on_sample) return;
    std::map<std::uint32_t, const PeerNode*> nodes;
    for (const auto& slot : slots) nodes[slot.id] = slot.node.get();
    s.on_sample(secondsOf(scheduler.now()), nodes);
  };
  const auto all_stopped = [&] {
    if (faults_left > 0) return false;
    return std::all_of(slots.begin(), slots.end(),
                       [](const Slot& slot) { return slot.node->finished(); });
  };
  // No run can take longer than every round at its deadline ceiling, after the last fault:
  // past that, something keeps a node alive that should not (stop, and report it unfinished).
  double last_fault = 0;
  for (const auto& f : s.faults) last_fault = std::max(last_fault, f.at_seconds);
  const std::uint64_t rounds = s.rounds ? s.rounds : s.config.rounds.count;
  const auto limit = atSeconds(last_fault + 60 +
                               double(rounds + 2) * double(s.config.rounds.deadline_ms) / 1000.0 +
                               double(rounds + 2) * Seconds(s.compute_time).count());
  const auto rounds_wall_start = std::chrono::steady_clock::now();
  const double rounds_cpu_start = processCpuSeconds();
  for (double next = s.sample_every_seconds;;) {
    const auto until = std::min(
        limit, s.sample_every_seconds > 0 ? atSeconds(next) : net::Clock::TimePoint::max());
    const auto outcome = scheduler.run(all_stopped, until);
    if (outcome != net::VirtualScheduler::Outcome::kTimeLimit || until == limit) break;
    sample();
    next += s.sample_every_seconds;
  }
  sample();
  result.rounds_cpu_seconds = processCpuSeconds() - rounds_cpu_start;
  result.rounds_wall_seconds =
      Seconds(std::chrono::steady_clock::now() - rounds_wall_start).count();

  result.virtual_seconds = secondsOf(scheduler.now());
  result.events = scheduler.eventsRun();
  result.every_vector_hashed = s.hash_every_vector;
  if (digest_memo) {
    result.digests_hashed = digest_memo->counters().hashed;
    result.digests_compared = digest_memo->counters().compared;
  }
  result.windows = scheduler.windows();
  for (auto& slot : slots) {
    slot.flush();
    result.peer_rounds += slot.rounds;
    if (slot.node->diverged()) result.diverged.push_back(slot.id);
    if (slot.done && !slot.node->diverged()) result.finished.push_back(slot.id);
    if (!slot.done) result.crashed.push_back(slot.id);
    if (s.write_models && !s.out.empty() && slot.done && !slot.node->diverged() &&
        slot.node->role() == PeerNode::Role::kHonest && !result.byzantine.contains(slot.id)) {
      const std::size_t shape[] = {slot.node->dimension()};
      writeNpy((s.out / fmt::format("node-{}.npy", slot.id)).string(), shape,
               slot.node->parameters());
    }
  }
  if (s.out.empty() && checkpoints) fs::remove_all(checkpoint_root);
  sink->flush();
  result.wall_seconds = Seconds(std::chrono::steady_clock::now() - wall_start).count();
  if (s.floor_steps > 0) {  // after the run's own wall time
    std::vector<std::size_t> honest;
    for (const auto& slot : slots) {
      if (!result.byzantine.contains(slot.id)) honest.push_back(slot.actor);
    }
    result.floor = measureComputeFloor(s.config, run, honest, scheduler.threads(), s.floor_steps);
  }
  return result;
}

}  // namespace phalanx::node
