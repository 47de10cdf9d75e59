// `phalanx inject`: the command line of tools/inject_run.h.
#include <memory>

#include "tools/command.h"
#include "tools/inject_run.h"

namespace phalanx::tools {

Command addInjectCommand(CLI::App& root) {
  auto o = std::make_shared<InjectOptions>();
  CLI::App* app = root.add_subcommand(
      "inject",
      "Change a running peer. Through its control endpoint (needs control.token): crash, hang S, "
      "slow MS, drop P, delay MS, corrupt P, partition ID,ID, attack NAME (or none), heal. To the "
      "process of a peer `phalanx launch` started here (needs --run DIR): kill (SIGKILL), stop "
      "(SIGSTOP), cont (SIGCONT).");
  app->add_option("--topology", o->topology, "topology file (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--node", o->node, "the peer's id")->required();
  app->add_option("--config", o->config, "the run's config (for control.token)")
      ->check(CLI::ExistingFile);
  app->add_option("--token-file", o->token_file,
                  "a file (mode 0600) holding the control token (default with --run: "
                  "DIR/control.token, which launch writes)")
      ->check(CLI::ExistingFile);
  app->add_option("--token", o->token,
                  "the token itself (every local user sees a command line: prefer --token-file)");
  app->add_option("--run", o->run,
                  "the --out folder of the launch that started the peer: process faults, and the "
                  "control token it wrote there (DIR/control.token)");
  app->add_flag("--json", o->json,
                "one JSON object (node, fault, outcome: applied, delivered or signalled)");
  app->add_option("fault", o->fault, "the fault and its argument, e.g. drop 0.3")
      ->required()
      ->expected(1, 2);
  return {app, [o] { return runInject(*o); }};
}

}  // namespace phalanx::tools
