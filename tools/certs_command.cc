// `phalanx certs DIR`: a cluster's certificates for `security: tls` (net/certs.h), for operators
// who place peers by hand; `phalanx launch` makes its own in the run folder.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "net/certs.h"
#include "tools/command.h"
#include "tools/run_analysis.h"
#include "topologies/topology.h"

namespace phalanx::tools {
namespace {

struct CertsOptions {
  std::string dir, topology, ids;
  std::uint32_t n = 0;
  int days = 825;
  bool json = false;
};

int runCerts(const CertsOptions& o) {
  std::vector<std::uint32_t> ids;
  try {
    if (!o.topology.empty()) {
      const topologies::Topology topology = topologies::loadTopology(o.topology);
      for (const auto& node : topology.nodes()) ids.push_back(node.id);
    } else if (!o.ids.empty()) {
      const std::set<std::uint32_t> listed = parseIdList(o.ids);
      ids.assign(listed.begin(), listed.end());
    } else {
      for (std::uint32_t k = 0; k < o.n; ++k) ids.push_back(k);
    }
  } catch (const base::Error& e) {
    spdlog::error("{}", e.what());
    return exitCodeOf(e);
  } catch (const std::invalid_argument& e) {
    spdlog::error("--ids: {}", e.what());
    return kExitBadInput;
  }
  if (auto written = net::writeClusterCerts(o.dir, ids, o.days); !written) {
    spdlog::error("certs: {}", written.error());
    return kExitFailure;
  }
  if (o.json) {
    nlohmann::ordered_json j;
    const std::filesystem::path dir = o.dir;
    j["ca"] = {{"certificate", (dir / "ca.pem").string()}, {"key", (dir / "ca.key").string()}};
    nlohmann::json nodes = nlohmann::json::array();
    for (const std::uint32_t id : ids) {
      nodes.push_back({{"id", id},
                       {"certificate", (dir / fmt::format("node-{}.pem", id)).string()},
                       {"key", (dir / fmt::format("node-{}.key", id)).string()}});
    }
    j["nodes"] = std::move(nodes);
    j["days"] = o.days;
    fmt::print("{}\n", j.dump());
    return kExitOk;
  }
  fmt::print(
      "certs: the cluster CA and {} node certificate(s) in {} (keys 0600). Each host needs "
      "ca.pem and its nodes' node-<id>.pem and .key; keep ca.key off the workers.\n",
      ids.size(), o.dir);
  return kExitOk;
}

}  // namespace

Command addCertsCommand(CLI::App& root) {
  auto o = std::make_shared<CertsOptions>();
  CLI::App* app = root.add_subcommand(
      "certs",
      "Make a cluster CA and one certificate per node (CN=node-<id>, EC P-256) for security: tls "
      "(the default): DIR/ca.pem, DIR/ca.key, DIR/node-<id>.pem, DIR/node-<id>.key. A CA already "
      "in DIR is kept, so nodes can be added later. Point security.dir at DIR.");
  app->add_option("dir", o->dir, "the folder to write")->required();
  auto* topology = app->add_option("--topology", o->topology, "one certificate per node of it")
                       ->check(CLI::ExistingFile);
  auto* n = app->add_option("--n", o->n, "nodes 0..N-1")->check(CLI::Range(1u, 65535u));
  auto* ids = app->add_option("--ids", o->ids, "these node ids only, e.g. 3,7");
  topology->excludes(n)->excludes(ids);
  n->excludes(ids);
  app->add_option("--days", o->days, "how long the certificates last (default 825)")
      ->check(CLI::Range(1, 36500));
  app->add_flag("--json", o->json, "print the files written as one JSON object (ca, nodes)");
  app->callback([app] {
    if (app->count("--topology") + app->count("--n") + app->count("--ids") == 0)
      throw CLI::RequiredError("--topology, --n or --ids");
  });
  return {app, [o] { return runCerts(*o); }};
}

}  // namespace phalanx::tools
