// Injected network faults as a wrapper around any Transport (DESIGN.md "Seams"): outgoing round
// messages dropped, corrupted or delayed with a probability or a delay, and a partition from a
// set of neighbours: nothing is sent to them, nothing they send is delivered, and they are
// reported down (on_down at the cut, on_up at the heal for those still connected underneath).
// The peers on the far side are not told: to them this node goes silent, as a stalled peer.
// Threading: the wrapped transport's.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "net/clock.h"
#include "net/transport.h"

namespace phalanx::net {

class FaultyTransport final : public Transport {
 public:
  // Builds the wrapped transport with handlers that pass through the partition.
  using Inner = std::function<std::unique_ptr<Transport>(TransportHandlers)>;
  FaultyTransport(Clock& clock, TransportHandlers handlers, const Inner& make_inner,
                  std::uint64_t seed);
  ~FaultyTransport() override;

  // Each outgoing round message is lost with probability p (the peer sees a sequence gap).
  void setDrop(double p) { drop_ = p; }
  // Each outgoing round message has 8 payload bytes flipped with probability p.
  void setCorrupt(double p) { corrupt_ = p; }
  // Outgoing round messages leave this much later.
  void setDelay(std::chrono::milliseconds delay) { delay_ = delay; }
  // Cut off from exactly these neighbours (empty: healed).
  void setPartitioned(const std::vector<std::uint32_t>& peers);
  // Clears every fault.
  void heal();

  std::uint16_t listen() override { return inner_->listen(); }
  void connect(std::vector<PeerAddress> addresses) override {
    inner_->connect(std::move(addresses));
  }
  bool send(std::uint32_t peer, const v1::Envelope& envelope) override;
  bool sendShared(std::uint32_t peer, const std::shared_ptr<const v1::Envelope>& envelope) override;
  bool sendRound(std::uint32_t peer, const v1::RoundMessage& header, Payload payload) override;
  void setRound(std::uint64_t round) override { inner_->setRound(round); }
  std::vector<std::uint32_t> livePeers() const override;
  bool authenticated() const override { return inner_->authenticated(); }
  const TransportStats& stats() const override { return inner_->stats(); }
  void stop() override;
  void abort() override;

  // Frames the partition kept from crossing, either way.
  std::uint64_t partitionDrops() const { return partition_drops_; }

 private:
  bool cut(std::uint32_t peer) const { return partitioned_.contains(peer); }
  bool blocked(std::uint32_t peer) {
    if (!cut(peer)) return false;
    ++partition_drops_;
    return true;
  }
  void releaseDelayed();

  Clock& clock_;
  TransportHandlers handlers_;
  std::unique_ptr<Transport> inner_;
  double drop_ = 0, corrupt_ = 0;
  std::chrono::milliseconds delay_{0};
  std::set<std::uint32_t> partitioned_;
  std::mt19937_64 rng_;
  struct Delayed {
    std::uint32_t peer;
    v1::RoundMessage header;
    Payload payload;
  };
  std::multimap<Clock::TimePoint, Delayed> delayed_;  // by when they leave
  std::unique_ptr<Timer> delay_timer_;
  bool stopped_ = false;
  std::uint64_t partition_drops_ = 0;
};

}  // namespace phalanx::net
