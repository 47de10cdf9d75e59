// A launch run (`phalanx launch`): every peer of a topology as its own `phalanx node` process, or
// as a Python training script that runs the node through the phalanx package (local peers
// spawned here, peers on other hosts over ssh), the monitor while they train, churn (honest
// local peers killed and restarted from their checkpoints), the peers dismissed once the
// honest ones finished, each ending classified (finished, crashed, diverged, killed), a clean
// teardown on Ctrl-C, and DIR/summary.json + DIR/report.html at the end.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/launch.h"

namespace phalanx::tools {

struct LaunchRunOptions {
  std::string topology, config, byzantine, attack = "alie", out, ssh = "ssh", remote_binary, wrap,
                                           remote_out;
  std::uint64_t rounds = 0;
  std::vector<std::string> sets;
  std::string script, python = "python3";
  std::string python_package;  // the built package's folder, put first on PYTHONPATH
  std::vector<std::string> script_args;
  std::string gpus = "auto";  // see gpuList (tools/launch.h)
  double monitor_every = 1.0;
  bool dry_run = false;
  // The outcome as one JSON object on stdout; the live table goes to stderr.
  bool json = false;
  bool force = false;  // out may hold an earlier run, whose files are deleted first
  double churn = 0;    // kills per minute among the honest local peers; 0: none
  double churn_down = 5;
  std::uint64_t churn_seed = 1;
  // What each local peer runs (`phalanx node ...`): this executable by default; a test names
  // the built binary.
  std::string binary = selfExecutable();
};

// Runs the peers to the end; the exit code `phalanx launch` gives (0: every honest peer
// finished; 1: one did not, or it was interrupted; 2: bad input).
int runLaunch(const LaunchRunOptions& options);

}  // namespace phalanx::tools
