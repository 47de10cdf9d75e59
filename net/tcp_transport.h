// Peer-to-peer TCP transport (DESIGN.md "Rounds over a real network", STYLE.md "Async
// model"): a listener plus an outgoing connection to every neighbour, handshake checks,
// one connection kept per pair, bounded write queues, heartbeats and liveness, reconnects
// with exponential backoff and jitter, Goodbye on shutdown. It moves v1::Envelopes and knows
// nothing of what is inside a RoundMessage's payload.
//
// Threading: a TcpTransport lives on one asio::io_context run by one thread; every method must
// be called on that thread (post to it), and every handler is called on it. Destroy it only
// after stop() (or abort()) and after the io_context has stopped running it.
//
// Each connection is a Session (net/tcp_session.h: its states, reads and write queue); TLS
// setup and certificate identities are net/tls.h's.
#pragma once

#include <asio.hpp>
#include <asio/ssl.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "net/frame.h"
#include "net/proto/phalanx.pb.h"
#include "net/transport.h"

namespace phalanx::net {

class TcpTransport final : public Transport {
 public:
  TcpTransport(asio::io_context& io, TransportConfig config, TransportHandlers handlers);
  ~TcpTransport() override;
  TcpTransport(const TcpTransport&) = delete;
  TcpTransport& operator=(const TcpTransport&) = delete;

  // With TLS, an unreadable CA, certificate or key throws std::system_error here.
  // Starts listening; returns the bound port. Errors (port taken) throw std::system_error.
  std::uint16_t listen() override;
  // Dials every neighbour at these addresses (and keeps redialling when down).
  void connect(std::vector<PeerAddress> addresses) override;
  bool send(std::uint32_t peer, const v1::Envelope& envelope) override;
  // Written to the socket straight from the shared payload.
  bool sendRound(std::uint32_t peer, const v1::RoundMessage& header, Payload payload) override;
  void setRound(std::uint64_t round) override { round_ = round; }
  std::vector<std::uint32_t> livePeers() const override;
  bool authenticated() const override { return config_.tls.enabled; }
  const TransportStats& stats() const override { return stats_; }
  std::uint16_t port() const { return port_; }
  void stop() override;
  void abort() override;

 private:
  class Session;
  friend class Session;

  void accept();
  // An accepted socket: a pending handshake, within the per-address and total caps.
  void admit(asio::ip::tcp::socket socket);
  bool neighbourAddress(const asio::ip::address& a) const;
  void dial(std::uint32_t peer);
  void scheduleDial(std::uint32_t peer, bool after_failure,
                    std::chrono::milliseconds extra = std::chrono::milliseconds(0));
  void heartbeat();
  // Session callbacks.
  bool adopt(const std::shared_ptr<Session>& session);
  void closed(const std::shared_ptr<Session>& session, std::string_view why);
  // When `session` is the pair's connection, hands that role to another open connection to
  // the same peer. False when it is the pair's connection and there is none.
  bool handOver(const std::shared_ptr<Session>& session);
  void reject(Refusal reason) { ++stats_.rejected[reason]; }

  asio::io_context& io_;
  TransportConfig config_;
  TransportHandlers handlers_;
  asio::ssl::context ssl_;  // used only with config_.tls.enabled
  asio::ip::tcp::acceptor acceptor_;
  asio::steady_timer heartbeat_timer_;
  std::uint16_t port_ = 0;
  std::uint64_t round_ = 0;
  bool stopped_ = false;
  std::map<std::uint32_t, std::shared_ptr<Session>> open_;  // one per peer
  std::vector<std::shared_ptr<Session>> sessions_;          // every live socket
  // What it takes to (re)dial one neighbour.
  struct Dialer {
    PeerAddress address;
    asio::steady_timer timer;
    std::chrono::milliseconds backoff;
    bool dialling = false;  // a resolve or connect is in flight
  };
  std::map<std::uint32_t, std::unique_ptr<Dialer>> dialers_;
  std::mt19937_64 jitter_;
  TransportStats stats_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // guards late handlers
};

}  // namespace phalanx::net
