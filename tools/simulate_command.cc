// `phalanx simulate`: every peer of a topology in this process, in virtual time, on the
// in-memory network (docs/GUIDE.md "Simulating"): the same round code, node-K.jsonl,
// summary.json and report.html as `phalanx launch`, the same files on every rerun.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "node/config.h"
#include "tools/command.h"
#include "tools/run_folder.h"
#include "tools/simulation_run.h"
#include "topologies/topology.h"
#include "train/dataset.h"

namespace phalanx::tools {
namespace {

// Whether the simulation leaves its honest peers as a user wants them: finished, none crashed or
// diverged. Exit code; the figures are printed.
int runSimulate(const SimulateRequest& r) {
  if (auto ready = prepareRunFolder(r.out, r.force); !ready) {
    spdlog::error("simulate: {}", ready.error());
    return kExitBadInput;
  }
  SimulateOutcome outcome;
  try {
    outcome = runSimulation(r);
  } catch (const base::Error& e) {
    spdlog::error("{}", e.what());
    return exitCodeOf(e);
  } catch (const std::invalid_argument& e) {
    spdlog::error("{}", e.what());
    return kExitBadInput;
  }
  if (r.json) {
    // One object: the run's summary and the simulation's own figures, as the files hold them.
    nlohmann::ordered_json j;
    j["summary"] = nlohmann::json::parse(outcome.summary_json);
    j["simulation"] = simulationObject(outcome);
    j["files"] = {{"summary", r.out + "/summary.json"},
                  {"report", r.out + "/report.html"},
                  {"simulation", r.out + "/simulation.json"}};
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("{}\n{}\nsummary: {}/summary.json\nreport:  {}/report.html\n", outcome.summary_json,
               simulationObject(outcome).dump(), r.out, r.out);
  }
  const auto& result = outcome.result;
  const auto honest = [&](std::uint32_t id) { return !result.byzantine.contains(id); };
  const bool honest_ok = std::none_of(result.crashed.begin(), result.crashed.end(), honest) &&
                         std::none_of(result.diverged.begin(), result.diverged.end(), honest);
  return honest_ok ? kExitOk : kExitFailure;
}

}  // namespace

Command addSimulateCommand(CLI::App& root) {
  auto o = std::make_shared<SimulateRequest>();
  CLI::App* app = root.add_subcommand(
      "simulate",
      "Run every peer of a topology in this process on an in-memory network in virtual time: "
      "the round code of `phalanx node`, DIR/node-K.jsonl, summary.json, report.html and "
      "monitor.jsonl as `phalanx launch` writes them, plus simulation.json (peer-rounds per "
      "second, peak memory). Reruns with the same seed write the same node-K.jsonl. Exit 0 when "
      "every honest peer finished.");
  app->add_option("--topology", o->topology_file, "topology file (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--config", o->config_file, "experiment config (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--out", o->out, "run folder")->required();
  app->add_option("--rounds", o->rounds, "number of rounds (overrides rounds.count)")
      ->check(CLI::PositiveNumber);
  app->add_option("--set", o->sets, "override a config field: path=value")->allow_extra_args(false);
  CLI::Option* byzantine =
      app->add_option("--byzantine", o->byzantine, "ids of the Byzantine peers, e.g. 8,9");
  app->add_option("--attack", o->attack, "what the Byzantine peers run (default alie)")
      ->check(checkAttackName, "an attack")
      ->needs(byzantine);
  app->add_option("--latency-ms", o->latency_ms, "one-way latency of every link (default 1)")
      ->check(CLI::PositiveNumber);
  app->add_option("--compute-ms", o->compute_ms,
                  "virtual time each peer's round computation takes (default 2: about a "
                  "Fashion-MNIST MLP step and mix on one core)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--rate-mbit", o->rate_mbit, "rate of every link in Mbit/s (default: unlimited)")
      ->check(CLI::NonNegativeNumber);
  app->add_option(
         "--links", o->links_file,
         "a links file: 'A B LATENCY_MS [RATE_MBIT [JITTER_MS [LOSS]]]' per edge, 'region NAME "
         "IDS', 'within ...' and 'across ...' link classes (others: the defaults)")
      ->check(CLI::ExistingFile);
  app->add_option("--faults", o->faults_file,
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
  app->add_option("--sample-every", o->sample_every_seconds,
                  "consensus distance every S virtual seconds (default: at the end)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--floor", o->floor_steps,
                  "after the rounds, time N local steps on each of a few fresh learners on the "
                  "same threads: simulation.json then gives the compute floor and the run's "
                  "share of it (e.g. --floor 200)")
      ->check(CLI::PositiveNumber);
  app->add_flag("--hash-every-vector", o->hash_every_vector,
                "each receiver digests every vector it hears, as a deployed peer does, instead of "
                "comparing bytes with the sender's (the statements' real CPU cost; results are "
                "identical)");
  app->add_flag("--json", o->json,
                "print one JSON object (summary, simulation, files) instead of the lines for "
                "people");
  app->add_flag("--force", o->force,
                "--out may hold an earlier run: its files (node-K.*, summary.json, ...) are "
                "deleted first instead of being read as part of this one");
  app->add_flag_callback(
      "--no-models", [o] { o->write_models = false; }, "do not write node-K.npy");
  o->progress = isatty(STDERR_FILENO) != 0;
  app->add_flag("--progress,!--no-progress", o->progress,
                "peer-rounds done, their rate and the time left on stderr (default: when stderr "
                "is a terminal)");
  return {app, [o, app] {
            // How the run was started, for its report.
            std::vector<std::string> words{"phalanx simulate"};
            for (const auto* opt : app->get_options()) {
              if (opt->count() == 0 || opt->get_name() == "--help") continue;
              if (opt->get_items_expected_max() == 0) {  // a flag
                words.push_back(opt->get_name());
                continue;
              }
              for (const auto& v : opt->results()) words.push_back(opt->get_name() + " " + v);
            }
            o->command_line = fmt::format("{}", fmt::join(words, " "));
            return runSimulate(*o);
          }};
}

}  // namespace phalanx::tools
