// `phalanx simulate`: every peer of a topology in this process, in virtual time, on the
// in-memory network (docs/GUIDE.md "Simulating"): the same round code, node-K.jsonl,
// summary.json and report.html as `phalanx launch`, the same files on every rerun.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <vector>

#include "node/config.h"
#include "node/dataset.h"
#include "tools/command.h"
#include "tools/launch.h"
#include "tools/simulation_run.h"
#include "topologies/topology.h"

namespace phalanx::tools {
namespace {

struct SimulateOptions {
  std::string topology, config, byzantine, attack = "alie", out, links, faults;
  std::vector<std::string> sets;
  std::uint64_t rounds = 0;
  double latency_ms = 1, compute_ms = 2, rate_mbit = 0, sample_every = 0, chaos_seconds = 1;
  unsigned threads = 0;
  std::size_t eval_samples = 0, chaos = 0;
  bool no_models = false;
  std::vector<std::string> argv;
};

int runSimulate(const SimulateOptions& o) {
  SimulateRequest r;  // field by field: GCC 12 misreads the map inside an aggregate init
  r.topology_file = o.topology;
  r.config_file = o.config;
  r.sets = o.sets;
  r.rounds = o.rounds;
  r.attack = o.attack;
  r.out = o.out;
  r.threads = o.threads;
  r.eval_samples = o.eval_samples;
  r.compute_time = std::chrono::microseconds(std::int64_t(o.compute_ms * 1000));
  r.sample_every_seconds = o.sample_every;
  r.write_models = !o.no_models;
  r.command_line = fmt::format("phalanx simulate {}", fmt::join(o.argv, " "));
  try {
    r.byzantine = parseIdList(o.byzantine);
    const net::LinkModel fallback{
        .latency = std::chrono::nanoseconds(std::int64_t(o.latency_ms * 1e6)),
        .megabits_per_second = o.rate_mbit};
    if (o.links.empty()) {
      r.links.fallback = fallback;
    } else {
      r.links = parseLinks(readTextFile(o.links), o.links, fallback);
    }
    if (!o.faults.empty()) r.faults = node::parseFaults(readTextFile(o.faults), o.faults);
    if (o.chaos > 0) {
      const auto topology = topologies::loadTopology(o.topology);
      std::vector<std::uint32_t> honest;
      for (const auto& n : topology.nodes()) {
        if (!r.byzantine.contains(n.id)) honest.push_back(n.id);
      }
      const auto config = node::loadConfig(o.config, o.sets);
      auto chaos = node::chaosFaults(topology, honest, o.chaos, o.chaos_seconds, config.seed);
      r.faults.insert(r.faults.end(), chaos.begin(), chaos.end());
    }
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitBadInput;
  }
  SimulateOutcome outcome;
  try {
    outcome = runSimulation(r);
  } catch (const node::ConfigError& e) {
    spdlog::error("{}", e.what());
    return kExitBadInput;
  } catch (const topologies::TopologyError& e) {
    spdlog::error("{}", e.what());
    return kExitBadInput;
  } catch (const node::DataError& e) {
    spdlog::error("{}", e.what());
    return kExitBadInput;
  } catch (const std::invalid_argument& e) {
    spdlog::error("{}", e.what());
    return kExitBadInput;
  }
  const auto peers = outcome.result.finished.size() + outcome.result.crashed.size() +
                     outcome.result.diverged.size();
  fmt::print("{}\n{}\nsummary: {}/summary.json\nreport:  {}/report.html\n",
             summaryJson(outcome.summary), simulationJson(outcome, peers), o.out, o.out);
  bool honest_ok = true;
  for (const std::uint32_t id : outcome.result.crashed)
    honest_ok &= outcome.result.byzantine.contains(id);
  for (const std::uint32_t id : outcome.result.diverged)
    honest_ok &= outcome.result.byzantine.contains(id);
  return honest_ok ? kExitOk : kExitFailure;
}

}  // namespace

Command addSimulateCommand(CLI::App& root) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* app = root.add_subcommand(
      "simulate",
      "Run every peer of a topology in this process on an in-memory network in virtual time: "
      "the round code of `phalanx node`, DIR/node-K.jsonl, summary.json, report.html and "
      "monitor.jsonl as `phalanx launch` writes them, plus simulation.json (peer-rounds per "
      "second, peak memory). Reruns with the same seed write the same node-K.jsonl. Exit 0 when "
      "every honest peer finished.");
  app->add_option("--topology", o->topology, "topology file (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--config", o->config, "experiment config (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--out", o->out, "run folder")->required();
  app->add_option("--rounds", o->rounds, "number of rounds (overrides rounds.count)")
      ->check(CLI::PositiveNumber);
  app->add_option("--set", o->sets, "override a config field: path=value")->allow_extra_args(false);
  app->add_option("--byzantine", o->byzantine, "ids of the Byzantine peers, e.g. 8,9");
  app->add_option("--attack", o->attack, "what the Byzantine peers run (default alie)");
  app->add_option("--latency-ms", o->latency_ms, "one-way latency of every link (default 1)")
      ->check(CLI::PositiveNumber);
  app->add_option("--compute-ms", o->compute_ms,
                  "virtual time each peer's round computation takes (default 2: about a "
                  "Fashion-MNIST MLP step and mix on one core)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--rate-mbit", o->rate_mbit, "rate of every link in Mbit/s (default: unlimited)")
      ->check(CLI::NonNegativeNumber);
  app->add_option(
         "--links", o->links,
         "per-edge links, one 'A B LATENCY_MS [RATE_MBIT]' per line (others: the defaults)")
      ->check(CLI::ExistingFile);
  app->add_option("--faults", o->faults,
                  "faults at virtual times, one 'SECONDS NODE COMMAND' per line (inject's "
                  "commands, and restart)")
      ->check(CLI::ExistingFile);
  app->add_option("--chaos", o->chaos,
                  "N random fault episodes among the honest peers (crash/restart, partition/heal, "
                  "attack switches)");
  app->add_option("--chaos-seconds", o->chaos_seconds,
                  "the virtual time span the chaos episodes fall in (default 1)")
      ->check(CLI::PositiveNumber);
  app->add_option("--threads", o->threads, "worker threads (default: every core)");
  app->add_option("--eval-samples", o->eval_samples,
                  "evaluate each peer on the first N test samples (default: all)");
  app->add_option("--sample-every", o->sample_every,
                  "consensus distance every S virtual seconds (default: at the end)")
      ->check(CLI::NonNegativeNumber);
  app->add_flag("--no-models", o->no_models, "do not write node-K.npy");
  return {app, [o, app] {
            o->argv.clear();
            for (const auto* opt : app->get_options()) {
              if (opt->count() == 0 || opt->get_name() == "--help") continue;
              for (const auto& v : opt->results()) o->argv.push_back(opt->get_name() + " " + v);
              if (opt->results().empty()) o->argv.push_back(opt->get_name());
            }
            return runSimulate(*o);
          }};
}

}  // namespace phalanx::tools
