// Kubernetes manifests for one run (`phalanx k8s`): a ConfigMap holding the run's config and a
// topology whose hosts are the StatefulSet's stable pod names, a Secret with the cluster's TLS
// certificates, a headless Service that gives every pod its DNS name, and a StatefulSet whose pod
// with ordinal k runs the k-th node of the topology in id order (`--id auto` reads the ordinal
// from PHALANX_RANK). Pure text generation; nothing is applied to a cluster.
#pragma once

#include <cstdint>
#include <expected>
#include <map>
#include <string>
#include <vector>

#include "topologies/topology.h"

namespace phalanx::tools {

struct K8sRequest {
  std::string name = "phalanx";  // StatefulSet, Service and ConfigMap; pods NAME-0, NAME-1, ...
  std::string ns = "default";    // namespace
  std::string image;             // an image with `phalanx` on its PATH
  std::uint16_t port = 7000;     // every pod's gossip port (pods have addresses of their own)
  std::uint16_t metrics_port = 9000;
  std::string config_text;        // the config file, as given
  std::vector<std::string> sets;  // --set overrides, given to every pod
  std::uint64_t rounds = 0;       // 0: rounds.count
  std::string storage = "1Gi";    // each pod's volume for node-K.jsonl, its log, checkpoints
  // Each pod's requests (the scheduler places it where they fit) and its memory limit (equal to
  // the request: a peer that outgrows it is restarted and resumes, instead of starving others).
  // The defaults fit the shipped configs' MLP with the Fashion-MNIST set in memory (239 MiB
  // peak for `phalanx train --config configs/demo.yaml`).
  std::string cpu = "1";
  std::string memory = "1Gi";
  // security: tls — the cluster's certificate files by name (ca.pem, node-<id>.pem,
  // node-<id>.key; never ca.key), in a Secret mounted read-only at /etc/phalanx/certs, which
  // every pod's security.dir names. Empty: the config brings its own, or says none.
  std::map<std::string, std::string> certs;
};

// NAME-k.NAME.NAMESPACE.svc.cluster.local: the DNS name of the pod with ordinal k.
std::string podHost(const K8sRequest& r, std::size_t ordinal);

// The topology every pod reads: the same ids, edges and budgets; the k-th node (id order) at
// podHost(r, k), every node on r.port and r.metrics_port.
topologies::Topology podTopology(const topologies::Topology& t, const K8sRequest& r);

// The three manifests as one multi-document YAML stream. Errors: a name or namespace that is
// not a DNS label, no image, equal ports, a CPU, memory or storage that is not a quantity.
std::expected<std::string, std::string> k8sManifests(const topologies::Topology& t,
                                                     const K8sRequest& r);

// The TLS files every pod needs (K8sRequest::certs), from `dir` (made by `phalanx certs`) or,
// when it is empty, from a cluster CA made for these manifests alone (its key is not kept).
// The error names a file that is missing.
std::expected<std::map<std::string, std::string>, std::string> k8sCertificates(
    const topologies::Topology& topology, const std::string& dir);

}  // namespace phalanx::tools
