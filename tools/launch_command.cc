// `phalanx launch`: the command line of a launch run (tools/launch_run.h).
#include <cstdlib>
#include <memory>

#include "tools/command.h"
#include "tools/launch_run.h"

namespace phalanx::tools {

Command addLaunchCommand(CLI::App& root) {
  auto o = std::make_shared<LaunchRunOptions>();
  o->python = PHALANX_DEFAULT_PYTHON;
  o->python_package = PHALANX_PYTHON_DIR;
  // Started as an installed wheel's `phalanx` (python/phalanx/_cli.py): scripts run under that
  // interpreter, where the package is installed, not under the one the build found.
  if (const char* python = std::getenv("PHALANX_PYTHON"); python != nullptr && *python != '\0') {
    o->python = python;
    o->python_package.clear();
  }
  CLI::App* app = root.add_subcommand(
      "launch",
      "Start every peer of a topology as its own `phalanx node` process (this machine's peers "
      "here, the others over ssh), monitor them live, and write DIR/summary.json and "
      "DIR/report.html. Ctrl-C: Goodbye to every peer, then the summary. Exit 0 when every "
      "honest peer finished.");
  app->add_option("--topology", o->topology, "topology file (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--config", o->config, "experiment config (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  CLI::Option* byzantine =
      app->add_option("--byzantine", o->byzantine, "ids of the Byzantine peers, e.g. 8,9");
  app->add_option("--attack", o->attack, "what the Byzantine peers run (default alie)")
      ->check(checkAttackName, "an attack")
      ->needs(byzantine);
  app->add_option("--rounds", o->rounds, "rounds (overrides rounds.count)")
      ->check(CLI::PositiveNumber);
  app->add_option("--set", o->sets, "override a config field for every peer: path=value")
      ->allow_extra_args(false);
  app->add_option("--out", o->out,
                  "folder for logs, per-peer JSON lines, summary.json, report.html")
      ->required();
  app->add_option("--monitor-every", o->monitor_every, "seconds between scrapes (default 1)")
      ->check(CLI::Range(0.05, 3600.0));
  app->add_option("--churn", o->churn,
                  "kill random honest peers started here, RATE per minute over the run, and "
                  "restart each from its checkpoint (default 0: none)")
      ->check(CLI::Range(0.0, 6000.0));
  app->add_option("--churn-down", o->churn_down,
                  "seconds a killed peer stays down before it restarts (default 5)")
      ->check(CLI::Range(0.05, 3600.0));
  app->add_option("--churn-seed", o->churn_seed, "seed of the kills' times and victims");
  app->add_option("--ssh", o->ssh,
                  "command that reaches another host, words split at spaces (default ssh; e.g. "
                  "'ssh -p 2222 -i key'); peers run under -tt so a closed session stops them");
  app->add_option("--remote-binary", o->remote_binary,
                  "phalanx's path on the other hosts (default: this one's)");
  app->add_option("--remote-out", o->remote_out,
                  "the run folder on the other hosts when they do not share --out's filesystem: "
                  "topology and config are copied there, each remote peer's node-K.jsonl, .npy "
                  "and .log copied back at the end (default: --out, shared)");
  app->add_option("--wrap", o->wrap,
                  "run every peer here under this command, {id} replaced by its id "
                  "(e.g. 'ip netns exec phx{id}' with tools/netem)");
  app->add_option("--script", o->script,
                  "run each peer as this Python training script instead of `phalanx node` (it "
                  "makes its peer with phalanx.Peer.from_env; arguments for it after --)")
      ->check(CLI::ExistingFile);
  app->add_option("--python", o->python,
                  "the interpreter for --script (default: the one this build found)");
  app->add_option("--gpus", o->gpus,
                  "CUDA devices the script peers of a host share, round-robin by LOCAL_RANK "
                  "(CUDA_VISIBLE_DEVICES): auto (default: launch's own CUDA_VISIBLE_DEVICES, "
                  "else every GPU nvidia-smi lists here; none: left unset), none, or a list "
                  "such as 0,1,2,3");
  app->add_option("script_args", o->script_args, "arguments for --script (after --)");
  app->add_flag("--dry-run", o->dry_run, "print each peer's command and start nothing");
  app->add_flag("--json", o->json,
                "print one JSON object at the end (summary, files) and the live table on "
                "stderr");
  app->add_flag("--force", o->force,
                "--out may hold an earlier run: its files (node-K.*, summary.json, ...) are "
                "deleted first instead of being read as part of this one");
  return {app, [o] { return runLaunch(*o); }};
}

}  // namespace phalanx::tools
