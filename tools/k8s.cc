#include "tools/k8s.h"

#include <fmt/format.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <regex>

#include "net/certs.h"
#include "tools/launch.h"

namespace phalanx::tools {
namespace {

constexpr const char* kConfigDir = "/etc/phalanx";
constexpr const char* kDataDir = "/var/lib/phalanx";
constexpr int kImageUser = 10001;  // the Dockerfile's user and group
constexpr const char* kCertsDir = "/etc/phalanx/certs";

// RFC 1123 label: lower-case letters, digits and '-', starting and ending alphanumeric. Pod
// names add "-K" to the name, so it keeps room for the ordinal.
bool dnsLabel(const std::string& s, std::size_t max) {
  if (s.empty() || s.size() > max) return false;
  const auto ok = [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c));
  };
  return ok(s.front()) && ok(s.back()) &&
         std::all_of(s.begin(), s.end(), [&](char c) { return ok(c) || c == '-'; });
}

// A Kubernetes resource quantity as people write them: a positive decimal number with at most
// one suffix (m, k, M, G, T, Ki, Mi, Gi, Ti).
bool quantity(const std::string& s) {
  static const std::regex form(R"(([0-9]+(\.[0-9]+)?|\.[0-9]+)(m|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?)");
  return std::regex_match(s, form) && s.find_first_of("123456789") != std::string::npos;
}

constexpr const char* kStringTag = "tag:yaml.org,2002:str";

// A value Kubernetes requires to be a string that YAML would read as a number or boolean
// ("true", "9000"): written double-quoted.
YAML::Node text(const std::string& value) {
  YAML::Node n(value);
  n.SetTag(kStringTag);
  return n;
}

// Writes `node` as block YAML: text() values double-quoted, multi-line text as literal blocks
// (the files in the ConfigMap stay readable), everything else plain.
void emit(YAML::Emitter& out, const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      out << YAML::BeginMap;
      for (const auto& kv : node) {
        out << YAML::Key << kv.first.Scalar() << YAML::Value;
        emit(out, kv.second);
      }
      out << YAML::EndMap;
      return;
    case YAML::NodeType::Sequence:
      out << YAML::BeginSeq;
      for (const auto& item : node) emit(out, item);
      out << YAML::EndSeq;
      return;
    case YAML::NodeType::Scalar:
      if (node.Tag() == kStringTag) {
        out << YAML::DoubleQuoted << node.Scalar();
      } else if (node.Scalar().find('\n') != std::string::npos) {
        out << YAML::Literal << node.Scalar();
      } else {
        out << node.Scalar();
      }
      return;
    default:
      out << YAML::Null;
  }
}

YAML::Node labels(const K8sRequest& r) {
  YAML::Node l;
  l["app.kubernetes.io/name"] = "phalanx";
  l["app.kubernetes.io/instance"] = r.name;
  return l;
}

YAML::Node metadata(const K8sRequest& r) {
  YAML::Node m;
  m["name"] = r.name;
  m["namespace"] = r.ns;
  m["labels"] = labels(r);
  return m;
}

YAML::Node port(const char* name, std::uint16_t number, bool container) {
  YAML::Node p;
  p["name"] = name;
  p[container ? "containerPort" : "port"] = number;
  p["protocol"] = "TCP";
  return p;
}

YAML::Node configMap(const topologies::Topology& t, const K8sRequest& r) {
  YAML::Node c;
  c["apiVersion"] = "v1";
  c["kind"] = "ConfigMap";
  c["metadata"] = metadata(r);
  c["data"]["topology.yaml"] = topologies::toYaml(
      podTopology(t, r),
      fmt::format("{} peers of StatefulSet {}: written by phalanx k8s", t.size(), r.name));
  c["data"]["config.yaml"] = r.config_text;
  return c;
}

// The TLS files. Every pod mounts all of them (one StatefulSet template): a pod an attacker
// owns could speak for the others, an outsider without the Secret for none.
YAML::Node secret(const K8sRequest& r) {
  YAML::Node s;
  s["apiVersion"] = "v1";
  s["kind"] = "Secret";
  s["metadata"] = metadata(r);
  s["type"] = "Opaque";
  for (const auto& [name, pem] : r.certs) s["stringData"][name] = pem;
  return s;
}

YAML::Node service(const K8sRequest& r) {
  YAML::Node s;
  s["apiVersion"] = "v1";
  s["kind"] = "Service";
  s["metadata"] = metadata(r);
  s["spec"]["clusterIP"] = "None";  // headless: one DNS record per pod, no load balancing
  // Peers dial each other before any is ready (round 0 waits for the neighbours).
  s["spec"]["publishNotReadyAddresses"] = true;
  s["spec"]["selector"] = labels(r);
  s["spec"]["ports"].push_back(port("gossip", r.port, false));
  s["spec"]["ports"].push_back(port("metrics", r.metrics_port, false));
  return s;
}

// The container runs the node; a clean finish leaves the pod idle with its results on the
// volume (a StatefulSet restarts containers that exit), a failure exits and is restarted, and
// the restart resumes from the newest checkpoint.
std::string nodeCommand(const K8sRequest& r) {
  std::string command = fmt::format(
      "phalanx node --topology {0}/topology.yaml --config {0}/config.yaml --id auto "
      "--listen-host 0.0.0.0 --out {1} --resume",
      kConfigDir, kDataDir);
  if (r.rounds > 0) command += fmt::format(" --rounds {}", r.rounds);
  if (!r.certs.empty()) command += fmt::format(" --set security.dir={}", kCertsDir);
  for (const std::string& set : r.sets) {
    std::string quoted = "'";
    for (const char c : set) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    command += " --set " + quoted + "'";
  }
  return command + " || exit $?; exec sleep infinity";
}

YAML::Node statefulSet(const topologies::Topology& t, const K8sRequest& r) {
  YAML::Node s;
  s["apiVersion"] = "apps/v1";
  s["kind"] = "StatefulSet";
  s["metadata"] = metadata(r);
  YAML::Node spec;
  spec["serviceName"] = r.name;
  spec["replicas"] = t.size();
  spec["podManagementPolicy"] = "Parallel";  // every peer at once, not one after another
  spec["selector"]["matchLabels"] = labels(r);
  YAML::Node pod;
  pod["metadata"]["labels"] = labels(r);
  pod["metadata"]["annotations"]["prometheus.io/scrape"] = text("true");
  pod["metadata"]["annotations"]["prometheus.io/port"] = text(std::to_string(r.metrics_port));
  pod["metadata"]["annotations"]["prometheus.io/path"] = text("/metrics");
  YAML::Node c;
  c["name"] = "node";
  c["image"] = r.image;
  c["command"].push_back("/bin/sh");
  c["command"].push_back("-c");
  c["args"].push_back(nodeCommand(r));
  YAML::Node rank;
  rank["name"] = "PHALANX_RANK";
  rank["valueFrom"]["fieldRef"]["fieldPath"] = "metadata.labels['apps.kubernetes.io/pod-index']";
  c["env"].push_back(rank);
  c["ports"].push_back(port("gossip", r.port, true));
  c["ports"].push_back(port("metrics", r.metrics_port, true));
  c["resources"]["requests"]["cpu"] = text(r.cpu);
  c["resources"]["requests"]["memory"] = text(r.memory);
  c["resources"]["limits"]["memory"] = text(r.memory);
  c["readinessProbe"]["httpGet"]["path"] = "/metrics";
  c["readinessProbe"]["httpGet"]["port"] = "metrics";
  YAML::Node config_mount, data_mount;
  config_mount["name"] = "config";
  config_mount["mountPath"] = kConfigDir;
  config_mount["readOnly"] = true;
  data_mount["name"] = "data";
  data_mount["mountPath"] = kDataDir;
  c["volumeMounts"].push_back(config_mount);
  c["volumeMounts"].push_back(data_mount);
  if (!r.certs.empty()) {
    YAML::Node certs_mount;
    certs_mount["name"] = "certs";
    certs_mount["mountPath"] = kCertsDir;
    certs_mount["readOnly"] = true;
    c["volumeMounts"].push_back(certs_mount);
  }
  // The image runs as user 10001 (Dockerfile); the volume is made writable to its group.
  pod["spec"]["securityContext"]["runAsNonRoot"] = true;
  pod["spec"]["securityContext"]["runAsUser"] = kImageUser;
  pod["spec"]["securityContext"]["runAsGroup"] = kImageUser;
  pod["spec"]["securityContext"]["fsGroup"] = kImageUser;
  pod["spec"]["containers"].push_back(c);
  YAML::Node config_volume;
  config_volume["name"] = "config";
  config_volume["configMap"]["name"] = r.name;
  pod["spec"]["volumes"].push_back(config_volume);
  if (!r.certs.empty()) {
    YAML::Node certs_volume;
    certs_volume["name"] = "certs";
    certs_volume["secret"]["secretName"] = r.name;
    certs_volume["secret"]["defaultMode"] = 0400;  // keys readable by the node's user only
    pod["spec"]["volumes"].push_back(certs_volume);
  }
  spec["template"] = pod;
  YAML::Node claim;
  claim["metadata"]["name"] = "data";
  claim["spec"]["accessModes"].push_back("ReadWriteOnce");
  claim["spec"]["resources"]["requests"]["storage"] = r.storage;
  spec["volumeClaimTemplates"].push_back(claim);
  s["spec"] = spec;
  return s;
}

}  // namespace

std::string podHost(const K8sRequest& r, std::size_t ordinal) {
  return fmt::format("{0}-{1}.{0}.{2}.svc.cluster.local", r.name, ordinal, r.ns);
}

topologies::Topology podTopology(const topologies::Topology& t, const K8sRequest& r) {
  std::vector<topologies::NodeSpec> nodes = t.nodes();
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    nodes[k].host = podHost(r, k);
    nodes[k].port = r.port;
    nodes[k].metrics_port = r.metrics_port;
  }
  return topologies::Topology(std::move(nodes), t.edges(), t.defaultBudget(), "k8s topology");
}

std::expected<std::string, std::string> k8sManifests(const topologies::Topology& t,
                                                     const K8sRequest& r) {
  // Pod names are NAME-ORDINAL, at most 63 characters.
  const std::size_t digits = std::to_string(t.size()).size();
  if (!dnsLabel(r.name, 62 - digits)) {
    return std::unexpected(
        fmt::format("--name {}: not a DNS label of at most {} characters (a-z, 0-9, '-')", r.name,
                    62 - digits));
  }
  if (!dnsLabel(r.ns, 63))
    return std::unexpected(fmt::format("--namespace {}: not a DNS label", r.ns));
  if (r.image.empty()) return std::unexpected("--image: required");
  if (r.port == 0 || r.metrics_port == 0 || r.port == r.metrics_port) {
    return std::unexpected("--port and --metrics-port: two different ports, neither 0");
  }
  for (const auto& [option, value] :
       {std::pair{"--cpu", &r.cpu}, {"--memory", &r.memory}, {"--storage", &r.storage}}) {
    if (!quantity(*value)) {
      return std::unexpected(fmt::format(
          "{} {}: not a Kubernetes quantity (e.g. 500m, 2, 1Gi, 512Mi)", option, *value));
    }
  }
  YAML::Emitter out;
  std::vector<YAML::Node> docs{configMap(t, r)};
  if (!r.certs.empty()) docs.push_back(secret(r));
  docs.push_back(service(r));
  docs.push_back(statefulSet(t, r));
  for (const YAML::Node& doc : docs) {
    out << YAML::BeginDoc;
    emit(out, doc);
  }
  return std::string(out.c_str()) + "\n";
}

std::expected<std::map<std::string, std::string>, std::string> k8sCertificates(
    const topologies::Topology& topology, const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::uint32_t> ids;
  for (const auto& node : topology.nodes()) ids.push_back(node.id);
  fs::path from = dir;
  std::optional<fs::path> scratch;
  if (from.empty()) {
    scratch = fs::temp_directory_path() / fmt::format("phalanx-k8s-certs-{}", ::getpid());
    if (auto written = net::writeClusterCerts(*scratch, ids); !written)
      return std::unexpected(written.error());
    from = *scratch;
  }
  std::map<std::string, std::string> files;
  std::string missing;
  const auto take = [&](const fs::path& file) {
    if (!fs::exists(file)) missing = file.string();
    files[file.filename().string()] = readTextFile(file);
  };
  take(net::caCertFile(from));
  for (const std::uint32_t id : ids) {
    take(net::nodeCertFile(from, id));
    take(net::nodeKeyFile(from, id));
  }
  if (scratch) fs::remove_all(*scratch);
  if (!missing.empty())
    return std::unexpected(
        fmt::format("--certs: {} does not exist (phalanx certs {} --topology "
                    "T.yaml makes it)",
                    missing, dir));
  return files;
}

}  // namespace phalanx::tools
