// `phalanx k8s`: prints the Kubernetes manifests (ConfigMap, headless Service, StatefulSet) that
// run every peer of a topology as one pod each (tools/k8s.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "node/config.h"
#include "tools/command.h"
#include "tools/k8s.h"
#include "tools/launch.h"
#include "tools/run_analysis.h"
#include "topologies/topology.h"

namespace phalanx::tools {
namespace {

struct K8sOptions {
  std::string topology, config, byzantine, attack = "alie", out, certs;
  K8sRequest request;
};

int runK8s(const K8sOptions& o) {
  K8sRequest r = o.request;
  try {
    const topologies::Topology topology = topologies::loadTopology(o.topology);
    try {
      for (std::string& set : byzantineSets(parseIdList(o.byzantine), o.attack, topology)) {
        r.sets.push_back(std::move(set));
      }
    } catch (const std::invalid_argument& e) {
      spdlog::error("{}", e.what());
      return kExitBadInput;
    }
    // The config with every override, checked here so a bad field fails before any pod starts.
    const node::Config config = node::loadConfig(o.config, r.sets);
    r.config_text = readTextFile(o.config);
    if (config.security.usesRunCertificates()) {
      if (auto certs = k8sCertificates(topology, o.certs); certs) {
        r.certs = std::move(*certs);
      } else {
        spdlog::error("k8s: {}", certs.error());
        return kExitFailure;
      }
    }
    const auto manifests = k8sManifests(topology, r);
    if (!manifests) {
      spdlog::error("{}", manifests.error());
      return kExitBadInput;
    }
    if (o.out.empty() || o.out == "-") {
      std::cout << *manifests;
      return kExitOk;
    }
    std::ofstream file(o.out);
    file << *manifests;
    if (!file.flush()) {
      spdlog::error("--out {}: cannot write", o.out);
      return kExitFailure;
    }
    spdlog::info("wrote {} (StatefulSet {} with {} pods; kubectl apply -f {})", o.out, r.name,
                 topology.size(), o.out);
    return kExitOk;
  } catch (const base::Error& e) {
    spdlog::error("{}", e.what());
    return exitCodeOf(e);
  }
}

}  // namespace

Command addK8sCommand(CLI::App& root) {
  auto o = std::make_shared<K8sOptions>();
  CLI::App* app = root.add_subcommand(
      "k8s",
      "Print Kubernetes manifests that run every peer of a topology as a pod: a ConfigMap (config "
      "and a topology of the pods' DNS names), a headless Service and a StatefulSet (pod ordinal "
      "k runs the k-th node in id order)");
  app->add_option("--topology", o->topology, "topology file (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--config", o->config, "experiment config (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--image", o->request.image, "container image with phalanx on its PATH")
      ->required();
  app->add_option("--name", o->request.name, "StatefulSet, Service and ConfigMap name")
      ->capture_default_str();
  app->add_option("--namespace", o->request.ns, "namespace")->capture_default_str();
  app->add_option("--port", o->request.port, "every pod's gossip port")->capture_default_str();
  app->add_option("--metrics-port", o->request.metrics_port, "every pod's metrics port")
      ->capture_default_str();
  app->add_option("--rounds", o->request.rounds, "number of rounds (overrides rounds.count)");
  app->add_option("--set", o->request.sets, "override a config field in every pod: path=value");
  CLI::Option* byzantine =
      app->add_option("--byzantine", o->byzantine, "ids of the Byzantine peers, e.g. 8,9");
  app->add_option("--attack", o->attack, "what the Byzantine peers run (default alie)")
      ->check(checkAttackName, "an attack")
      ->needs(byzantine);
  app->add_option("--storage", o->request.storage, "each pod's volume (jsonl, log, checkpoints)")
      ->capture_default_str();
  app->add_option("--cpu", o->request.cpu, "each pod's CPU request (cores, or 500m)")
      ->capture_default_str();
  app->add_option("--memory", o->request.memory, "each pod's memory request and limit (2Gi)")
      ->capture_default_str();
  app->add_option("--certs", o->certs,
                  "security: tls (the default): the cluster's certificates from this folder "
                  "(`phalanx certs DIR --topology T.yaml`; keeps its CA for later nodes) in the "
                  "Secret; without it, a CA made for these manifests, its key not kept")
      ->check(CLI::ExistingDirectory);
  app->add_option("--out", o->out, "write the manifests here instead of standard output");
  return {app, [o] { return runK8s(*o); }};
}

}  // namespace phalanx::tools
