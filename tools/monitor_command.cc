// `phalanx monitor`: the command line of tools/monitor_run.h.
#include <memory>

#include "tools/command.h"
#include "tools/monitor_run.h"

namespace phalanx::tools {

Command addMonitorCommand(CLI::App& root) {
  auto o = std::make_shared<MonitorOptions>();
  CLI::App* app = root.add_subcommand(
      "monitor",
      "Scrape every peer of a topology (/metrics, /model) and show round, honest accuracy, "
      "consensus distance, Byzantine leakage, detection, wire bytes, round time and dead peers, "
      "refreshing in place; on Ctrl-C, --duration, or when every peer is gone, print the summary "
      "and write --summary/--report. --from DIR rebuilds them from a finished launch.");
  app->add_option("--topology", o->topology, "topology file (YAML)")->check(CLI::ExistingFile);
  app->add_option("--byzantine", o->byzantine, "ids the monitor knows to be Byzantine, e.g. 8,9");
  app->add_option("--summary", o->summary, "write the summary JSON here");
  app->add_option("--report", o->report, "write the HTML report here");
  app->add_option("--png", o->png,
                  "also write each plot as DIR/NAME.svg and DIR/NAME.png (via rsvg-convert)");
  app->add_option("--config", o->config,
                  "the run's config, shown in the report (its control.token reads /model)")
      ->check(CLI::ExistingFile);
  app->add_option("--token-file", o->token_file,
                  "a file (mode 0600) holding the control token that GET /model requires, e.g. "
                  "a launch's OUT/control.token (instead of --config)")
      ->check(CLI::ExistingFile);
  app->add_option("--token", o->token,
                  "the token itself (every local user sees a command line: prefer --token-file)");
  app->add_option("--from", o->from, "a finished launch's --out folder")
      ->check(CLI::ExistingDirectory);
  app->add_option("--baseline", o->baseline,
                  "a clean run's --out folder: its figures and accuracy beside this run's")
      ->check(CLI::ExistingDirectory);
  app->add_option("--every", o->every, "seconds between scrapes (default 1)")
      ->check(CLI::Range(0.05, 3600.0));
  app->add_option("--duration", o->duration,
                  "stop after this many seconds (default: until Ctrl-C)");
  app->add_flag("--json", o->json,
                "print one JSON object at the end (summary, files written) and the live table "
                "on stderr");
  app->add_option("--prometheus-config", o->prometheus_config,
                  "print a Prometheus scrape configuration for this topology file and exit")
      ->check(CLI::ExistingFile);
  return {app, [o] { return runMonitor(*o); }};
}

}  // namespace phalanx::tools
