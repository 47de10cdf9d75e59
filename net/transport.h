// Peer-to-peer TCP transport (DESIGN.md "Rounds over a real network", STYLE.md "Async
// model"): a listener plus an outgoing connection to every neighbour, handshake checks,
// one connection kept per pair, bounded write queues, heartbeats and liveness, reconnects
// with exponential backoff and jitter, Goodbye on shutdown. It moves v1::Envelopes and knows
// nothing of what is inside a RoundMessage's payload.
//
// Threading: a Transport lives on one asio::io_context run by one thread; every method must
// be called on that thread (post to it), and every handler is called on it. Destroy the
// Transport only after stop() (or abort()) and after the io_context has stopped running it.
//
// Session states:   connect/accept --send Hello--> handshake --peer Hello ok--> open
//                        |                            |  (bad Hello: Goodbye(reason), close)
//                        +------ error / EOF / Goodbye / liveness timeout ----> closed
#pragma once

#include <algorithm>
#include <asio.hpp>
#include <asio/ssl.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "net/frame.h"
#include "net/proto/phalanx.pb.h"

namespace phalanx::net {

struct PeerAddress {
  std::uint32_t id = 0;
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
};

// security: tls — mutual TLS with a cluster CA (tools/gen-certs); a peer's certificate
// (CN=node-<id>) must name the id it claims in its Hello.
struct TlsFiles {
  bool enabled = false;
  std::string ca, cert, key;  // PEM files
};

struct TransportConfig {
  std::uint32_t self = 0;
  std::string cluster_id = "phalanx";
  std::uint64_t model_dim = 0;
  std::string config_digest;
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 0;              // 0: any free port (tests)
  std::vector<std::uint32_t> neighbours;      // who may connect and whom we dial
  std::size_t max_queued_bytes = 256u << 20;  // per peer; beyond it sends are dropped
  std::chrono::milliseconds heartbeat_every{250};
  std::chrono::milliseconds liveness_timeout{3000};
  std::chrono::milliseconds handshake_timeout{2000};
  std::chrono::milliseconds backoff_initial{20};
  std::chrono::milliseconds backoff_max{2000};
  std::uint64_t seed = 1;  // reconnect jitter
  TlsFiles tls;
};

struct TransportHandlers {
  // The message lives in the session's receive buffer: move from it to keep it, otherwise
  // its storage is reused for the next one.
  std::function<void(std::uint32_t peer, v1::RoundMessage& message)> on_round;
  std::function<void(std::uint32_t peer, const v1::ResyncRequest& request)> on_resync;
  std::function<void(std::uint32_t peer, std::uint64_t round)> on_heartbeat;
  std::function<void(std::uint32_t peer, const v1::RoundDigest& digest)> on_digest;
  std::function<void(std::uint32_t peer)> on_up;
  std::function<void(std::uint32_t peer, std::string_view why)> on_down;
};

struct PeerStats {
  std::uint64_t bytes_sent = 0, bytes_received = 0;  // whole frames, prefixes included
  std::uint64_t frames_sent = 0, frames_received = 0;
  std::uint64_t connects = 0;       // handshakes completed with this peer
  std::uint64_t dropped_sends = 0;  // refused because the queue was full or no connection
};

struct TransportStats {
  std::map<std::uint32_t, PeerStats> peers;
  std::map<std::string, std::uint64_t> rejected;  // by reason: frame errors, handshake checks
  std::uint64_t handshake_failures = 0;
  std::uint64_t reconnects = 0;  // connects beyond the first per peer
};

class Transport {
 public:
  Transport(asio::io_context& io, TransportConfig config, TransportHandlers handlers);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // With TLS, an unreadable CA, certificate or key throws std::system_error here.
  // Starts listening; returns the bound port. Errors (port taken) throw std::system_error.
  std::uint16_t listen();

  // Starts dialling every neighbour at these addresses (and keeps redialling when down).
  void connect(std::vector<PeerAddress> addresses);

  // Queues one envelope to `peer`. False (and counted) when there is no open connection to
  // it or its queue is full: a slow peer never grows memory without bound.
  bool send(std::uint32_t peer, const v1::Envelope& envelope);

  // Queues a RoundMessage whose payload is shared, not copied: one encoded delta goes to every
  // neighbour from the same buffer, written straight from it. header.payload() must be empty.
  using Payload = std::shared_ptr<const std::vector<std::uint8_t>>;
  bool sendRound(std::uint32_t peer, const v1::RoundMessage& header, Payload payload);

  // Fault injection (a network partition): frames to and from these peers are dropped and
  // counted, heartbeats included, so their connections die of liveness timeouts and keep
  // being redialled until the partition heals (an empty set).
  void setPartitioned(std::vector<std::uint32_t> peers) { partitioned_ = std::move(peers); }
  bool partitioned(std::uint32_t peer) const {
    return std::find(partitioned_.begin(), partitioned_.end(), peer) != partitioned_.end();
  }

  // Heartbeats carry this round.
  void setRound(std::uint64_t round) { round_ = round; }

  // Peers with an open connection now.
  std::vector<std::uint32_t> livePeers() const;
  const TransportStats& stats() const { return stats_; }
  std::uint16_t port() const { return port_; }

  // Goodbye(LEAVING) to every peer, then close everything; nothing is redialled.
  void stop();
  // Closes everything at once without a Goodbye: what a crash looks like to the peers.
  void abort();

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
  std::optional<v1::Goodbye::Reason> checkHello(const v1::Hello& hello, std::string& detail) const;
  bool adopt(const std::shared_ptr<Session>& session);
  void closed(const std::shared_ptr<Session>& session, std::string_view why);
  // When `session` is the pair's connection, hands that role to another open connection to
  // the same peer. False when it is the pair's connection and there is none.
  bool handOver(const std::shared_ptr<Session>& session);
  void reject(std::string_view reason) { ++stats_.rejected[std::string(reason)]; }

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
  std::vector<std::uint32_t> partitioned_;
  TransportStats stats_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // guards late handlers
};

}  // namespace phalanx::net
