// phalanx: one executable, one subcommand per job (DESIGN.md "Operating it").
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "base/log_format.h"
#include "base/text.h"
#include "kernels/device.h"
#include "tools/command.h"

namespace {

// "did you mean" for a mistyped option or subcommand: the closest long option of the deepest
// subcommand given (and its parents', which it accepts too), or the closest subcommand name.
std::string suggestion(CLI::App& root, int argc, char** argv) {
  CLI::App* deepest = &root;
  for (;;) {
    const auto parsed = deepest->get_subcommands();
    if (parsed.empty()) break;
    deepest = parsed.front();
  }
  std::vector<std::string> options, commands;
  for (CLI::App* a = deepest; a != nullptr; a = a->get_parent()) {
    for (const CLI::Option* o : a->get_options()) {
      for (const auto& name : o->get_lnames()) options.push_back("--" + name);
    }
  }
  for (const CLI::App* sub : deepest->get_subcommands({})) commands.push_back(sub->get_name());
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::string name = arg.substr(0, arg.find('='));
    if (name.starts_with("--")) {
      if (std::find(options.begin(), options.end(), name) != options.end()) continue;
      if (const auto close = phalanx::base::closestName(name, options))
        return "did you mean " + *close + "?\n";
    } else if (!name.starts_with("-") && deepest == &root) {
      if (const auto close = phalanx::base::closestName(name, commands))
        return "did you mean `phalanx " + *close + "`?\n";
      return {};
    }
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  using namespace phalanx::tools;
#if defined(__GLIBC__)
  // Every round allocates and frees model-sized buffers (payloads, decoded rows, a rule's
  // scratch; a simulation holds every peer's). With glibc's defaults freed ones go back to the
  // kernel and fault back in the next round; kept in the heap, they are reused. The cost: up to
  // 512 MB that was freed stays mapped.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
  CLI::App app{"phalanx: fault-tolerant, decentralized, peer-to-peer training node"};
  app.set_version_flag("--version", std::string("phalanx ") + PHALANX_VERSION + " (" +
                                        phalanx::kernels::backendSummary() + ")");
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.require_subcommand(1);
  // Root options (--log-level) also after the subcommand: `phalanx simulate ... --log-level
  // warn`. Set before the subcommands are added, which inherit it.
  app.fallthrough();

  std::vector<Command> commands{
      addTrainCommand(app),    addLabCommand(app),     addBenchCommand(app),
      addTopologyCommand(app), addNodeCommand(app),    addLaunchCommand(app),
      addInjectCommand(app),   addMonitorCommand(app), addExperimentCommand(app),
      addSimulateCommand(app), addK8sCommand(app),     addCertsCommand(app),
      addConfigCommand(app)};

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, version or the error
    if (code != 0) std::cerr << suggestion(app, argc, argv);
    return code == 0 ? kExitOk : kExitBadInput;
  }

  auto logger = spdlog::stderr_color_mt("phalanx");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern(phalanx::base::kLogPattern);

  // The last net: a command that lets an error escape still ends with one line saying what
  // went wrong (a full disk, a folder it may not write) and an exit code, not an abort.
  try {
    for (const Command& c : commands) {
      if (c.app->parsed()) return c.run();
    }
  } catch (const phalanx::base::Error& e) {
    spdlog::error("{}", e.what());
    return exitCodeOf(e);
  } catch (const std::filesystem::filesystem_error& e) {
    spdlog::error("{}", e.what());
    return kExitFailure;
  }
  return kExitBadInput;
}
