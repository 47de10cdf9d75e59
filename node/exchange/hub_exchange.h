// exchange: hub (ALGORITHMS.md §3.6, docs/PROTOCOL.md "Hub exchange"): a star whose leaves send
// their gradients (standalone or tracked, as in exchange: gradient) to the centre, which
// aggregates them robustly around its own and broadcasts the one update (hub_broadcast.h) that
// every peer, the hub included, applies. A leaf hears only the broadcast and mixes nothing.
#pragma once

#include "node/exchange/gradient_exchange.h"
#include "node/exchange/hub_broadcast.h"

namespace phalanx::node {

class HubExchange : public GradientExchange {
 public:
  // `hub`: the star's centre; `broadcast`: its downlink (the hub's only).
  HubExchange(ExchangeContext context, std::uint32_t hub,
              std::unique_ptr<GradientFeedback> feedback, std::unique_ptr<ReplicaGossip> gossip,
              std::unique_ptr<AccordionStep> accordion, std::unique_ptr<HubBroadcast> broadcast);

  std::optional<HubSide> hubSide() const override { return side_; }
  // The hub keeps its own vector as the rule's pivot and sends nothing until the broadcast; a
  // leaf sends as in exchange: gradient.
  void sendGradient(std::uint64_t t, std::span<const float> g, bool spam) override;
  std::span<const float> pivot() const override;
  bool mixes() const override { return side_ == HubSide::kHub; }
  bool corroborates() const override { return false; }
  void countDirected(NodeMetrics& metrics) const override {
    (side_ == HubSide::kHub ? metrics.bytes_downlink_total : metrics.bytes_uplink_total) =
        metrics.bytes_sent_total;
  }
  // The hub: the aggregate to every leaf, and the same update applied here.
  void apply(std::uint64_t t, std::span<const float> mixed, RoundRecord& record) override;
  bool applyBroadcast(std::uint64_t t, const std::vector<std::uint32_t>& heard,
                      RoundRecord& record) override;
  std::span<const float> leafOwnVector(std::uint64_t t) override;

  void save(train::Checkpoint& c) const override;
  void restore(const train::Checkpoint& c) override;

 private:
  std::uint32_t hub_;
  HubSide side_;
  std::unique_ptr<HubBroadcast> broadcast_;
  std::vector<float> own_;  // the hub's vector (a leaf attacker's honest one)
};

}  // namespace phalanx::node
