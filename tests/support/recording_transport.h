// A transport that keeps what a peer sends, in order, with every neighbour it is given live: for
// tests of what a round puts on the wire without a network.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "net/transport.h"

namespace phalanx::testing {

class RecordingTransport final : public net::Transport {
 public:
  struct Message {
    std::uint32_t peer;
    net::v1::RoundMessage header;
    net::Transport::Payload payload;
  };
  explicit RecordingTransport(std::vector<std::uint32_t> live) : live_(std::move(live)) {}
  std::uint16_t listen() override { return 0; }
  void connect(std::vector<net::PeerAddress>) override {}
  bool send(std::uint32_t peer, const net::v1::Envelope& e) override {
    envelopes.push_back({peer, e});
    return true;
  }
  bool sendRound(std::uint32_t peer, const net::v1::RoundMessage& h, Payload p) override {
    sent.push_back({peer, h, std::move(p)});
    return true;
  }
  void setRound(std::uint64_t) override {}
  std::vector<std::uint32_t> livePeers() const override { return live_; }
  const net::TransportStats& stats() const override { return stats_; }
  void stop() override {}
  void abort() override {}
  bool authenticated() const override { return authenticated_peers; }

  bool authenticated_peers = true;  // as TLS or the simulation's network
  std::vector<Message> sent;
  std::vector<std::pair<std::uint32_t, net::v1::Envelope>> envelopes;

 private:
  std::vector<std::uint32_t> live_;
  net::TransportStats stats_;
};

}  // namespace phalanx::testing
