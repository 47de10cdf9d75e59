// A `phalanx` subcommand: its CLI11 parser and what runs when it was chosen.
// Exit codes (DESIGN.md): 0 success, 1 failure, 2 bad input.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>

#include "base/error.h"
#include "base/names.h"
#include "node/attack_spec.h"

namespace phalanx::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;
// phalanx node: the model became NaN/Inf (the rule let an attack through); stopped after a
// last evaluation so its neighbours go on without waiting for it.
inline constexpr int kExitDiverged = 3;

// The exit code for a library error: bad input (2), except a checkpoint that cannot be
// written or read back, which is a failure of the run (1).
inline int exitCodeOf(const base::Error& e) {
  return e.kind() == base::ErrorKind::kCheckpoint ? kExitFailure : kExitBadInput;
}

// An option that takes one of `table`'s names, parsed into the enum once (the help lists them).
template <class E, std::size_t N>
CLI::Option* addChoiceOption(CLI::App* app, const std::string& name, E& out,
                             const base::NameTable<E, N>& table, const std::string& what) {
  std::map<std::string, E> values;
  for (const auto& e : table.entries) values.emplace(std::string(e.name), e.value);
  return app->add_option(name, out, fmt::format("{}: {}", what, fmt::join(table.names(), ", ")))
      ->transform(CLI::CheckedTransformer(values));
}

// A validator for --attack: what a node can run, checked before anything starts (exit 2, with
// the closest name for a typo) instead of by every node after launch.
inline std::string checkAttackName(const std::string& name) {
  const auto spec = node::AttackSpec::parse(name);
  return spec ? std::string() : spec.error();
}

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// Each adds its subcommand to `root`; options bind to state the returned `run` owns.
Command addTrainCommand(CLI::App& root);
Command addLabCommand(CLI::App& root);
Command addBenchCommand(CLI::App& root);
Command addCertsCommand(CLI::App& root);
Command addTopologyCommand(CLI::App& root);
Command addNodeCommand(CLI::App& root);
Command addLaunchCommand(CLI::App& root);
Command addInjectCommand(CLI::App& root);
Command addMonitorCommand(CLI::App& root);
Command addExperimentCommand(CLI::App& root);
Command addSimulateCommand(CLI::App& root);
Command addK8sCommand(CLI::App& root);
Command addConfigCommand(CLI::App& root);

}  // namespace phalanx::tools
