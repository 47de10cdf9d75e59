// `phalanx experiment`: the command line of a grid's run (tools/grid_run.h).
#include <memory>

#include "tools/command.h"
#include "tools/grid_run.h"

namespace phalanx::tools {

Command addExperimentCommand(CLI::App& root) {
  auto o = std::make_shared<GridRunOptions>();
  CLI::App* app = root.add_subcommand(
      "experiment",
      "Run every cell of a grid (attacks x rules x seeds x any config field x f) with `phalanx "
      "launch` (or `phalanx simulate`: --engine simulate), and write DIR/results.csv, "
      "DIR/results.md and DIR/plots. A failed cell is "
      "recorded and the grid goes on; --resume skips cells already done and retries those that "
      "could not run. Exit 0 when every cell ran.");
  app->add_option("--grid", o->grid, "grid file (YAML; see configs/experiments/)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--out", o->out, "results folder")->required();
  app->add_option("--filter", o->filters,
                  "run only cells whose axis takes one of these values: field=v1,v2 (the "
                  "tables also show the other cells recorded in --out)")
      ->allow_extra_args(false);
  app->add_option("--jobs", o->jobs, "cells at a time (default 1)")->check(CLI::Range(1, 16));
  app->add_flag("--resume", o->resume,
                "skip the cells already done in --out (cells that could not run are retried)");
  app->add_flag("--report-only", o->report_only,
                "run nothing: write results.csv, results.md and the plots from the cells' "
                "records already in --out (cells without one are reported as not run)");
  app->add_option("--rounds", o->rounds, "rounds per cell, overriding the grid (a quick pass)")
      ->check(CLI::PositiveNumber);
  app->add_option("--base-port", o->base_port,
                  "first port (each job slot uses 500 from here; default 20000)");
  app->add_flag("--json", o->json,
                "print one JSON object at the end (files written, every cell's record) instead "
                "of the lines for people");
  addChoiceOption(app, "--engine", o->engine, kEngines,
                  "launch: real processes (default); simulate: every peer in one process, "
                  "virtual time (reproducible, no ports)");
  return {app, [o] { return runGrid(*o); }};
}

}  // namespace phalanx::tools
