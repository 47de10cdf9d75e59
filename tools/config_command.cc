// `phalanx config show|reference`: a config with every default filled in, and the reference of
// every field (docs/CONFIG.md), both from what the loader reads (node/config_reference.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "node/config.h"
#include "node/config_reference.h"
#include "tools/command.h"

namespace phalanx::tools {
namespace {

struct ConfigOptions {
  std::string file;
  std::vector<std::string> sets;
  bool json = false;
  bool show_secrets = false;
};

// The fields whose values open something (control.token opens /control and /model): shown as
// <redacted> unless asked for, since a resolved config is pasted into issues and chats.
constexpr std::string_view kSecretFields[] = {"control.token"};
constexpr std::string_view kRedacted = "<redacted>";

void redact(base::FieldLog& fields) {
  for (auto& f : fields) {
    const bool secret = std::find(std::begin(kSecretFields), std::end(kSecretFields), f.path) !=
                        std::end(kSecretFields);
    if (secret && f.value != "\"\"" && !f.value.empty()) f.value = kRedacted;
  }
}

// A field's YAML flow value as JSON: numbers and booleans as such, quoted text as text.
nlohmann::json jsonOf(const YAML::Node& n) {
  if (n.IsSequence()) {
    nlohmann::json items = nlohmann::json::array();
    for (const auto& item : n) items.push_back(jsonOf(item));
    return items;
  }
  if (!n.IsScalar()) return nullptr;
  if (n.Tag() != "!") {  // not quoted
    long long i = 0;
    double d = 0;
    bool b = false;
    if (YAML::convert<long long>::decode(n, i)) return i;
    if (YAML::convert<double>::decode(n, d)) return d;
    if (YAML::convert<bool>::decode(n, b)) return b;
  }
  return n.Scalar();
}

int runShow(const ConfigOptions& o) {
  try {
    base::FieldLog fields = node::loadConfigFields(o.file, o.sets);
    if (!o.show_secrets) redact(fields);
    if (!o.json) {
      fmt::print("# {} resolved: every field, defaults filled in\n{}", o.file,
                 node::resolvedYaml(fields));
      return kExitOk;
    }
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& f : fields) out[f.path] = jsonOf(YAML::Load(f.value));
    fmt::print("{}\n", out.dump());
    return kExitOk;
  } catch (const base::Error& e) {
    spdlog::error("{}", e.what());
    return exitCodeOf(e);
  }
}

}  // namespace

Command addConfigCommand(CLI::App& root) {
  auto o = std::make_shared<ConfigOptions>();
  CLI::App* app = root.add_subcommand(
      "config",
      "show: a config file with every field the node reads, defaults filled in (after --set); "
      "reference: every field, what it takes, its default and meaning (docs/CONFIG.md)");
  app->require_subcommand(1);
  CLI::App* show = app->add_subcommand("show", "print the resolved config (YAML, or --json)");
  show->add_option("config", o->file, "experiment config (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  show->add_option("--set", o->sets, "override a config field: path=value")
      ->allow_extra_args(false);
  show->add_flag("--json", o->json, "one JSON object: field path -> value");
  show->add_flag("--show-secrets", o->show_secrets,
                 "print control.token as it is (otherwise <redacted>)");
  CLI::App* reference = app->add_subcommand("reference", "print docs/CONFIG.md");
  return {app, [o, show, reference] {
            if (show->parsed()) return runShow(*o);
            if (reference->parsed()) {
              fmt::print("{}", node::configReference());
              return kExitOk;
            }
            return kExitBadInput;
          }};
}

}  // namespace phalanx::tools
