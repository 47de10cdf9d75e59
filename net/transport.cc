#include "net/transport.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <type_traits>
#include <utility>

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

bool dispatchEnvelope(const TransportHandlers& handlers, std::uint32_t peer,
                      const v1::Envelope& e) {
  switch (e.body_case()) {
    case v1::Envelope::kResync:
      if (handlers.on_resync) handlers.on_resync(peer, e.resync());
      return true;
    case v1::Envelope::kHeartbeat:
      if (handlers.on_heartbeat) handlers.on_heartbeat(peer, e.heartbeat().round());
      return true;
    case v1::Envelope::kDigest:
      if (handlers.on_digest) handlers.on_digest(peer, e.digest());
      return true;
    case v1::Envelope::kCoalition:
      if (handlers.on_coalition) handlers.on_coalition(peer, e.coalition());
      return true;
    default:
      return false;
  }
}

TransportHandlers filteredHandlers(const TransportHandlers& h,
                                   std::function<bool(std::uint32_t)> hears,
                                   std::function<bool(std::uint32_t)> links) {
  // Each wrapper keeps an absent handler absent (callers test them before building messages).
  const auto gate = [](const auto& inner, const std::function<bool(std::uint32_t)>& pass) {
    using Handler = std::decay_t<decltype(inner)>;
    if (!inner) return Handler();
    return Handler([inner, pass](std::uint32_t peer, auto&&... args) {
      if (pass(peer)) inner(peer, std::forward<decltype(args)>(args)...);
    });
  };
  return TransportHandlers{.on_round = gate(h.on_round, hears),
                           .on_resync = gate(h.on_resync, hears),
                           .on_heartbeat = gate(h.on_heartbeat, hears),
                           .on_digest = gate(h.on_digest, hears),
                           .on_coalition = gate(h.on_coalition, hears),
                           .on_up = gate(h.on_up, links),
                           .on_down = gate(h.on_down, links)};
}

}  // namespace phalanx::net
