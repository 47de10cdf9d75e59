// What the round loop needs of a network (DESIGN.md "Seams"): send an envelope or a round message
// with a shared payload to a neighbour, receive through handlers, connection events, heartbeats
// carrying the round. Implemented by TcpTransport (Asio TCP, the daemon), MemoryTransport
// (virtual time, `phalanx simulate`) and wrapped by FaultyTransport (injected faults).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/proto/phalanx.pb.h"
#include "net/received.h"
#include "net/refusal.h"

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
  // Move from the message to keep it (its payload is shared, never copied).
  std::function<void(std::uint32_t peer, Received& message)> on_round;
  std::function<void(std::uint32_t peer, const v1::ResyncRequest& request)> on_resync;
  std::function<void(std::uint32_t peer, std::uint64_t round)> on_heartbeat;
  std::function<void(std::uint32_t peer, const v1::RoundDigest& digest)> on_digest;
  std::function<void(std::uint32_t peer, const v1::Coalition& share)> on_coalition;
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
  std::map<Refusal, std::uint64_t> rejected;  // frame errors, handshake checks, link misuse
  std::uint64_t handshake_failures = 0;
  std::uint64_t reconnects = 0;  // connects beyond the first per peer
};

// What an open link's envelopes mean, one dispatch for every transport: resync requests,
// heartbeats, digests and coalition shares go to their handlers (none set: dropped). False,
// and nothing called, for any other body (a Hello, a Goodbye or a round message is the link's
// own business; an empty or unknown body is the caller's to refuse).
bool dispatchEnvelope(const TransportHandlers& handlers, std::uint32_t peer,
                      const v1::Envelope& envelope);

// `handlers`, each message handler called only for a peer `hears` lets through, and on_up and
// on_down only for one `links` lets through (the fault wrapper's partitions).
TransportHandlers filteredHandlers(const TransportHandlers& handlers,
                                   std::function<bool(std::uint32_t)> hears,
                                   std::function<bool(std::uint32_t)> links);

// The Hello this node sends, and the checks a peer's Hello must pass (one home for both: every
// transport runs the same handshake). nullopt: accepted; otherwise the refusal, with `detail`.
v1::Envelope helloFor(const TransportConfig& config);
std::optional<v1::Goodbye::Reason> checkHello(const TransportConfig& config, const v1::Hello& hello,
                                              std::string& detail);

// Threading: every method on the owner's thread (real time: the io_context's; virtual time: the
// owner's actor), and every handler is called there.
class Transport {
 public:
  using Payload = net::Payload;
  virtual ~Transport() = default;

  // Starts listening where there is something to listen on; returns the bound port (0: none).
  virtual std::uint16_t listen() = 0;
  // Starts connecting to every neighbour (and keeps reconnecting while they are down).
  virtual void connect(std::vector<PeerAddress> addresses) = 0;

  // Queues one envelope to `peer`. False (and counted) when there is no open connection to
  // it or its queue is full: a slow peer never grows memory without bound.
  virtual bool send(std::uint32_t peer, const v1::Envelope& envelope) = 0;
  // The same envelope to each of several peers, one call per peer: a transport that can hand
  // every receiver the one immutable message (the in-memory network) does instead of copying
  // it; the others send it as `send` does.
  virtual bool sendShared(std::uint32_t peer, const std::shared_ptr<const v1::Envelope>& envelope) {
    return send(peer, *envelope);
  }
  // Queues a RoundMessage whose payload is shared, not copied: one encoded delta goes to every
  // neighbour from the same buffer. header.payload() must be empty.
  virtual bool sendRound(std::uint32_t peer, const v1::RoundMessage& header, Payload payload) = 0;

  // Heartbeats carry this round.
  virtual void setRound(std::uint64_t round) = 0;
  // Peers with an open connection now, ascending.
  virtual std::vector<std::uint32_t> livePeers() const = 0;
  virtual const TransportStats& stats() const = 0;
  // Whether a link's peer id is proven (mutual TLS, or the in-process memory network): then
  // what arrives on it is that peer's own word. Without it a Hello proves nothing, and anyone
  // can hold a neighbour's connection until the neighbour takes it back.
  virtual bool authenticated() const { return false; }

  // Goodbye(LEAVING) to every peer, then close everything; nothing is redialled.
  virtual void stop() = 0;
  // Closes everything at once without a Goodbye: what a crash looks like to the peers.
  virtual void abort() = 0;
};

}  // namespace phalanx::net
