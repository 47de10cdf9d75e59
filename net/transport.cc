#include "net/transport.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "net/frame.h"

namespace phalanx::net {

v1::Envelope helloFor(const TransportConfig& config) {
  v1::Envelope hello;
  auto* h = hello.mutable_hello();
  h->set_protocol_version(kProtocolVersion);
  h->set_cluster_id(config.cluster_id);
  h->set_node_id(config.self);
  h->set_model_dim(config.model_dim);
  h->set_config_digest(config.config_digest);
  return hello;
}

std::optional<v1::Goodbye::Reason> checkHello(const TransportConfig& config, const v1::Hello& h,
                                              std::string& detail) {
  if (h.protocol_version() != kProtocolVersion) {
    detail = fmt::format("protocol version {} (this node speaks {})", h.protocol_version(),
                         kProtocolVersion);
    return v1::Goodbye::WRONG_VERSION;
  }
  if (h.cluster_id() != config.cluster_id) {
    detail = fmt::format("cluster '{}' (this node is in '{}')", h.cluster_id(), config.cluster_id);
    return v1::Goodbye::WRONG_CLUSTER;
  }
  if (std::find(config.neighbours.begin(), config.neighbours.end(), h.node_id()) ==
      config.neighbours.end()) {
    detail = fmt::format("node {} is not a neighbour of node {}", h.node_id(), config.self);
    return v1::Goodbye::UNKNOWN_NODE;
  }
  if (h.model_dim() != config.model_dim) {
    detail = fmt::format("model dimension {} (this node has {})", h.model_dim(), config.model_dim);
    return v1::Goodbye::WRONG_DIMENSION;
  }
  if (h.config_digest() != config.config_digest) {
    detail = "a different configuration digest";
    return v1::Goodbye::WRONG_DIGEST;
  }
  return std::nullopt;
}

}  // namespace phalanx::net
