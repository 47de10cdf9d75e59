// phalanx k8s: the manifests parse, and ids, hosts and ports agree with the topology (no
// cluster needed; `kubectl --dry-run=client` is not on the test machines).
#include "tools/k8s.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <vector>

#include "topologies/topology.h"

namespace phalanx::tools {
namespace {

using ::testing::HasSubstr;

// Ids not 0..n-1, an override budget and a ring: what a pod ordinal maps to must follow id order.
constexpr const char* kTopology = R"(
byzantine_budget: 1
nodes:
  - {id: 2, host: 10.0.0.1, port: 7100, metrics_port: 9100}
  - {id: 5, host: 10.0.0.2, port: 7100, metrics_port: 9100, byzantine_budget: 0}
  - {id: 9, host: 10.0.0.3, port: 7100, metrics_port: 9100}
  - {id: 11, host: 10.0.0.4, port: 7100, metrics_port: 9100}
edges: [[2, 5], [5, 9], [9, 11], [11, 2]]
)";

struct Parsed {
  YAML::Node config_map, secret, service, stateful_set;
};

Parsed manifests(const K8sRequest& r, const topologies::Topology& t) {
  const auto text = k8sManifests(t, r);
  EXPECT_TRUE(text.has_value()) << text.error();
  const std::vector<YAML::Node> docs = YAML::LoadAll(*text);
  EXPECT_EQ(docs.size(), r.certs.empty() ? 3u : 4u);
  Parsed p;
  for (const YAML::Node& d : docs) {
    const std::string kind = d["kind"].as<std::string>();
    (kind == "ConfigMap" ? p.config_map
     : kind == "Secret"  ? p.secret
     : kind == "Service" ? p.service
                         : p.stateful_set) = d;
    EXPECT_EQ(d["metadata"]["name"].as<std::string>(), r.name);
    EXPECT_EQ(d["metadata"]["namespace"].as<std::string>(), r.ns);
  }
  EXPECT_TRUE(p.config_map && p.service && p.stateful_set);
  return p;
}

std::map<std::string, int> portsOf(const YAML::Node& list, const char* field) {
  std::map<std::string, int> out;
  for (const YAML::Node& p : list) out[p["name"].as<std::string>()] = p[field].as<int>();
  return out;
}

K8sRequest request() {
  return {.name = "fmnist",
          .ns = "research",
          .image = "registry.example/phalanx:1",
          .port = 7400,
          .metrics_port = 9400,
          .config_text =
              "# a comment: with 'quotes' and \"more\"\nrounds: {count: 50}   \n\n"
              "mixing:\n  rule: nna\n",
          .sets = {"mixing.rule=cs_plus", "byzantine.9.attack=alie", "data.path=/it's"},
          .rounds = 40};
}

TEST(K8s, TheConfigMapsTopologyIsTheSameGraphAtThePodsNames) {
  const topologies::Topology t = topologies::parseTopology(kTopology, "t.yaml");
  const K8sRequest r = request();
  const Parsed p = manifests(r, t);
  EXPECT_EQ(p.config_map["data"]["config.yaml"].as<std::string>(), r.config_text);
  const topologies::Topology pods =
      topologies::parseTopology(p.config_map["data"]["topology.yaml"].as<std::string>(), "cm");
  ASSERT_EQ(pods.size(), t.size());
  EXPECT_EQ(pods.edges(), t.edges());
  EXPECT_EQ(pods.defaultBudget(), t.defaultBudget());
  for (std::size_t k = 0; k < t.size(); ++k) {
    const auto& node = pods.nodes()[k];
    EXPECT_EQ(node.id, t.nodes()[k].id);  // pod ordinal k runs the k-th id
    EXPECT_EQ(node.host, "fmnist-" + std::to_string(k) + ".fmnist.research.svc.cluster.local");
    EXPECT_EQ(node.port, r.port);
    EXPECT_EQ(node.metrics_port, r.metrics_port);
    EXPECT_EQ(pods.budgetOf(node.id), t.budgetOf(node.id));
  }
}

TEST(K8s, ServiceAndStatefulSetAgreeOnPortsLabelsAndPods) {
  const topologies::Topology t = topologies::parseTopology(kTopology, "t.yaml");
  const K8sRequest r = request();
  const Parsed p = manifests(r, t);
  const YAML::Node& svc = p.service["spec"];
  EXPECT_EQ(svc["clusterIP"].as<std::string>(), "None");  // headless: a DNS name per pod
  EXPECT_TRUE(svc["publishNotReadyAddresses"].as<bool>());
  const std::map<std::string, int> ports{{"gossip", 7400}, {"metrics", 9400}};
  EXPECT_EQ(portsOf(svc["ports"], "port"), ports);

  const YAML::Node& spec = p.stateful_set["spec"];
  EXPECT_EQ(spec["replicas"].as<std::size_t>(), t.size());
  EXPECT_EQ(spec["serviceName"].as<std::string>(), r.name);
  const YAML::Node& pod = spec["template"];
  for (const char* label : {"app.kubernetes.io/name", "app.kubernetes.io/instance"}) {
    const std::string value = pod["metadata"]["labels"][label].as<std::string>();
    EXPECT_EQ(spec["selector"]["matchLabels"][label].as<std::string>(), value);
    EXPECT_EQ(svc["selector"][label].as<std::string>(), value);
  }
  // Annotations are strings to Kubernetes: quoted, or "true" and 9400 would be a bool and an int.
  const YAML::Node& annotations = pod["metadata"]["annotations"];
  for (const auto& [key, value] : {std::pair{"prometheus.io/scrape", "true"},
                                   {"prometheus.io/port", "9400"},
                                   {"prometheus.io/path", "/metrics"}}) {
    EXPECT_EQ(annotations[key].as<std::string>(), value);
    EXPECT_EQ(annotations[key].Tag(), "!") << key << " is not a quoted string";
  }
  EXPECT_EQ(spec["replicas"].Tag(), "?");  // a plain scalar: an integer to Kubernetes
  ASSERT_EQ(pod["spec"]["containers"].size(), 1u);
  const YAML::Node& c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["image"].as<std::string>(), r.image);
  EXPECT_EQ(portsOf(c["ports"], "containerPort"), ports);
  // Not root, and the volume writable to the image's user (Dockerfile: 10001).
  EXPECT_TRUE(pod["spec"]["securityContext"]["runAsNonRoot"].as<bool>());
  EXPECT_EQ(pod["spec"]["securityContext"]["fsGroup"].as<int>(), 10001);
  // Requests the scheduler places pods by; the memory limit equals the request.
  EXPECT_EQ(c["resources"]["requests"]["cpu"].as<std::string>(), r.cpu);
  EXPECT_EQ(c["resources"]["requests"]["memory"].as<std::string>(), r.memory);
  EXPECT_EQ(c["resources"]["limits"]["memory"].as<std::string>(), r.memory);
  EXPECT_EQ(c["resources"]["requests"]["cpu"].Tag(), "!");  // "1" is a quantity, not an int
  EXPECT_EQ(c["env"][0]["name"].as<std::string>(), "PHALANX_RANK");
  EXPECT_EQ(c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>(),
            "metadata.labels['apps.kubernetes.io/pod-index']");
  const std::string command = c["args"][0].as<std::string>();
  EXPECT_THAT(command, HasSubstr("phalanx node --topology /etc/phalanx/topology.yaml --config "
                                 "/etc/phalanx/config.yaml --id auto --listen-host 0.0.0.0"));
  EXPECT_THAT(command, HasSubstr("--rounds 40 --set 'mixing.rule=cs_plus' --set "
                                 "'byzantine.9.attack=alie' --set 'data.path=/it'\\''s'"));
  EXPECT_THAT(command, HasSubstr("|| exit $?; exec sleep infinity"));
  // The config volume holds the ConfigMap the pods read; the data volume is claimed per pod.
  EXPECT_EQ(pod["spec"]["volumes"][0]["configMap"]["name"].as<std::string>(), r.name);
  EXPECT_EQ(spec["volumeClaimTemplates"][0]["metadata"]["name"].as<std::string>(), "data");
  EXPECT_EQ(
      spec["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"].as<std::string>(),
      r.storage);
}

TEST(K8s, RefusesNamesKubernetesRefuses) {
  const topologies::Topology t = topologies::parseTopology(kTopology, "t.yaml");
  for (const char* bad : {"", "Phalanx", "-x", "x-", "a_b", "a.b"}) {
    K8sRequest r = request();
    r.name = bad;
    EXPECT_THAT(k8sManifests(t, r).error(), HasSubstr("not a DNS label")) << bad;
  }
  K8sRequest r = request();
  r.name = std::string(61, 'a');  // 61 + "-" + one digit = 63: still a pod name
  EXPECT_TRUE(k8sManifests(t, r).has_value());
  r.name = std::string(62, 'a');
  EXPECT_FALSE(k8sManifests(t, r).has_value());
  r = request();
  r.ns = "Research";
  EXPECT_THAT(k8sManifests(t, r).error(), HasSubstr("--namespace"));
  r = request();
  r.image.clear();
  EXPECT_THAT(k8sManifests(t, r).error(), HasSubstr("--image"));
  r = request();
  r.metrics_port = r.port;
  EXPECT_THAT(k8sManifests(t, r).error(), HasSubstr("two different ports"));
  for (const char* bad : {"", "0", "1.5 Gi", "-1", "2GB", "lots", "1e3"}) {
    r = request();
    r.memory = bad;
    EXPECT_THAT(k8sManifests(t, r).error(), HasSubstr("--memory")) << bad;
  }
  for (const char* good : {"500m", "2", "0.5", "1Gi", "512Mi", "1.5G"}) {
    r = request();
    r.cpu = good;
    r.memory = good;
    EXPECT_TRUE(k8sManifests(t, r).has_value()) << good;
  }
}

TEST(K8s, TheCertificatesAreASecretEveryPodMountsReadOnlyAsItsSecurityDir) {
  const topologies::Topology t = topologies::parseTopology(kTopology, "t.yaml");
  K8sRequest r = request();
  r.certs = {{"ca.pem", "CA"}, {"node-2.pem", "C2"}, {"node-2.key", "K2"}};
  const Parsed p = manifests(r, t);
  ASSERT_TRUE(p.secret.IsMap());
  EXPECT_EQ(p.secret["stringData"]["node-2.key"].as<std::string>(), "K2");
  EXPECT_FALSE(p.secret["stringData"]["ca.key"]);
  const YAML::Node pod = p.stateful_set["spec"]["template"]["spec"];
  EXPECT_THAT(pod["containers"][0]["args"][0].as<std::string>(),
              HasSubstr("--set security.dir=/etc/phalanx/certs"));
  bool mounted = false;
  for (const YAML::Node& m : pod["containers"][0]["volumeMounts"]) {
    if (m["name"].as<std::string>() == "certs") {
      mounted =
          m["readOnly"].as<bool>() && m["mountPath"].as<std::string>() == "/etc/phalanx/certs";
    }
  }
  EXPECT_TRUE(mounted);
  bool secret_volume = false;
  for (const YAML::Node& v : pod["volumes"]) {
    if (v["name"].as<std::string>() == "certs")
      secret_volume = v["secret"]["secretName"].as<std::string>() == r.name &&
                      v["secret"]["defaultMode"].as<int>() == 0400;
  }
  EXPECT_TRUE(secret_volume);
  // Without certificates (the config's own, or none): no Secret, no security.dir.
  const Parsed plain = manifests(request(), t);
  EXPECT_FALSE(plain.secret.IsMap());
  EXPECT_THAT(
      plain.stateful_set["spec"]["template"]["spec"]["containers"][0]["args"][0].as<std::string>(),
      ::testing::Not(HasSubstr("security.dir")));
}

}  // namespace
}  // namespace phalanx::tools
