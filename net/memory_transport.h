// The in-memory network of `phalanx simulate` (DESIGN.md "Simulation"): every peer's
// MemoryTransport in one process, in virtual time. A frame costs what TcpTransport would write
// (the same length prefix and envelope bytes, counted the same way) and arrives after its link's
// latency plus its bytes over the link's rate, behind whatever the sender queued on that link
// before (per directed link, first in first out). The handshake is TcpTransport's Hello with its
// checks; heartbeats carry the round (one right after the handshake, so joining takes a
// latency, not a heartbeat period); stop() says Goodbye and abort() is a reset the neighbours
// see one latency later. Round messages are checked as the TCP receiver checks them.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "net/clock.h"
#include "net/transport.h"
#include "net/virtual_time.h"

namespace phalanx::net {

// One undirected link, as netem would shape it. A frame leaves when the link has sent what was
// queued before it, takes bytes/rate to serialise, then latency ± jitter (uniform) to arrive,
// never before the frame ahead of it (TCP delivers in order). Loss is TCP's: a frame that loses
// any of its segments (1,448 bytes each, each lost with probability `loss`) arrives one round
// trip later (fast retransmit; with SACK, the losses of one window are repaired together), or a
// 200 ms timeout later when it has fewer than 4 segments (too few duplicate ACKs).
struct LinkModel {
  std::chrono::nanoseconds latency = std::chrono::milliseconds(1);  // one way; > jitter
  double megabits_per_second = 0;                                   // 0: unlimited
  std::chrono::nanoseconds jitter{0};                               // uniform in ±jitter
  double loss = 0;  // probability that a segment is lost, in [0, 1)
};

// A default link, link classes by region (within one region, across two) and per-edge
// exceptions (undirected: {a, b} with a < b), in that order of precedence from last to first:
// an edge's own entry wins, then its class when both ends have a region, then the default.
struct LinkTable {
  LinkModel fallback;
  std::map<std::pair<std::uint32_t, std::uint32_t>, LinkModel> edges;
  std::map<std::uint32_t, std::string> region_of;  // node id -> region name
  std::optional<LinkModel> within, across;
  std::uint64_t seed = 1;  // jitter and loss draws (per directed link, in send order)
  const LinkModel& of(std::uint32_t a, std::uint32_t b) const;
  // The shortest a frame can take on any link (latency - jitter): the scheduler's lookahead.
  std::chrono::nanoseconds minLatency() const;
};

class MemoryNetwork {
 public:
  // `actor_of`: each node id's actor in the scheduler. The scheduler's lookahead must not exceed
  // links.minLatency().
  MemoryNetwork(VirtualScheduler& scheduler, std::map<std::uint32_t, std::uint32_t> actor_of,
                LinkTable links);

  // The endpoint of node config.self, on its actor's clock; it replaces an earlier one of the
  // same id (a restart). Call from that actor's events, or before or between runs.
  std::unique_ptr<Transport> transport(TransportConfig config, TransportHandlers handlers);

  std::uint32_t actorOf(std::uint32_t node) const { return actor_of_.at(node); }
  VirtualScheduler& scheduler() { return scheduler_; }

 private:
  friend class MemoryTransport;
  VirtualScheduler& scheduler_;
  std::map<std::uint32_t, std::uint32_t> actor_of_;
  LinkTable links_;
  std::vector<class MemoryTransport*> endpoints_;  // by actor; each slot touched by its actor only
};

}  // namespace phalanx::net
