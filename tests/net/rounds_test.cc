// Rounds over the real transport, in one process on 127.0.0.1 port 0: eight peers
// all-to-all; a peer killed mid-run (the others finish that round at the deadline and go on);
// its restart (it adopts the neighbours' round from their heartbeats, they resync it with a
// keyframe); a partition and its healing. The per-edge sequence and keyframe bookkeeping is
// the node's protocol (DESIGN.md "Rounds over a real network"), kept minimal here.
#include <gtest/gtest.h>

#include <asio.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <set>

#include "net/asio_clock.h"
#include "net/faulty_transport.h"
#include "net/round_gate.h"
#include "net/tcp_transport.h"
#include "tests/support/run_until.h"

namespace phalanx::net {
namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kPeers = 8;

struct Peer {
  std::uint32_t id = 0;
  std::uint16_t port = 0;
  std::unique_ptr<AsioClock> clock;
  std::unique_ptr<FaultyTransport> transport;  // over a TcpTransport
  std::unique_ptr<RoundGate> gate;
  std::vector<RoundResult> results;
  std::map<std::uint32_t, std::uint64_t> next_out;  // sequence to send, per neighbour
  std::map<std::uint32_t, std::uint64_t>
      next_in;                          // sequence expected, per sender (absent: needs a keyframe)
  std::set<std::uint32_t> keyframe_to;  // neighbours owed a keyframe
  std::map<std::uint32_t, int> keyframes_from;
  int gaps = 0;
  bool running = false;
  bool adopting = false;  // restarted: waits for a neighbour's round before its first
  std::uint64_t stop_after = 0;
};

class Rounds {
 public:
  Rounds() {
    for (std::uint32_t id = 0; id < kPeers; ++id) {
      peers_.push_back(std::make_unique<Peer>());
      create(id, 0, 0);
    }
    for (auto& p : peers_) connect(*p);
  }

  void beginAll() {
    for (auto& p : peers_) begin(*p);
  }

  void create(std::uint32_t id, std::uint16_t port, std::uint64_t first_round) {
    Peer& p = *peers_[id];
    p = Peer{.id = id};
    TransportConfig c{.self = id,
                      .cluster_id = "rounds",
                      .model_dim = 16,
                      .config_digest = "d",
                      .listen_port = port,
                      .heartbeat_every = 40ms,
                      .liveness_timeout = 300ms,
                      .backoff_initial = 10ms,
                      .backoff_max = 100ms};
    for (std::uint32_t j = 0; j < kPeers; ++j) {
      if (j != id) c.neighbours.push_back(j);
    }
    p.clock = std::make_unique<AsioClock>(io);
    p.transport = std::make_unique<FaultyTransport>(
        *p.clock,
        TransportHandlers{
            .on_round = [&p](std::uint32_t, Received& m) { p.gate->add(std::move(m)); },
            .on_resync = [&p](std::uint32_t from,
                              const v1::ResyncRequest&) { p.keyframe_to.insert(from); },
            .on_heartbeat =
                [this, &p](std::uint32_t from, std::uint64_t round) {
                  p.gate->noteRound(from, round);
                  if (p.adopting && round > 0 &&
                      p.gate->catchUp()) {  // a restarted peer joins its neighbours' round
                    p.adopting = false;
                    begin(p);
                  }
                },
            .on_up = [&p](std::uint32_t peer) { p.keyframe_to.insert(peer); },
            .on_down = [&p](std::uint32_t, std::string_view) { p.gate->poke(); }},
        [&](TransportHandlers h) { return std::make_unique<TcpTransport>(io, c, std::move(h)); },
        id);
    p.port = p.transport->listen();
    p.gate = std::make_unique<RoundGate>(*p.clock, *p.transport, c.neighbours,
                                         GateConfig{.deadline = {.fixed_ms = 200}}, first_round);
  }

  void connect(Peer& p) {
    std::vector<PeerAddress> all;
    for (auto& q : peers_) all.push_back({q->id, "127.0.0.1", q->port});
    p.transport->connect(all);
  }

  void begin(Peer& p) {
    p.running = true;
    step(p);
  }

  void step(Peer& p) {
    if (!p.running || (p.stop_after && p.gate->openRound() >= p.stop_after)) return;
    const std::uint64_t round = p.gate->openRound();
    p.transport->setRound(round);
    auto payload = std::make_shared<const std::vector<std::uint8_t>>(4, std::uint8_t(round));
    for (const std::uint32_t j : p.transport->livePeers()) {
      v1::RoundMessage h;
      h.set_round(round);
      h.set_sender(p.id);
      h.set_sequence(p.next_out[j]++);
      h.set_kind(p.keyframe_to.erase(j) ? v1::RoundMessage::KEYFRAME : v1::RoundMessage::DELTA);
      p.transport->sendRound(j, h, payload);
    }
    p.gate->wait([this, &p](RoundResult&& r) {
      for (auto& [sender, m] : r.messages) {
        if (m.kind() == v1::RoundMessage::KEYFRAME) {
          ++p.keyframes_from[sender];
          p.next_in[sender] = m.sequence() + 1;
        } else if (p.next_in.contains(sender) && p.next_in[sender] == m.sequence()) {
          ++p.next_in[sender];
        } else {  // a gap: this replica is invalid until a keyframe
          ++p.gaps;
          p.next_in.erase(sender);
          v1::Envelope ask;
          ask.mutable_resync()->set_round(r.round);
          p.transport->send(sender, ask);
        }
      }
      p.results.push_back(std::move(r));
      asio::post(io, [this, &p] { step(p); });
    });
  }

  template <typename Pred>
  bool runUntil(Pred done, std::chrono::milliseconds limit = 20s) {
    return testing::runUntil(io, done, limit);
  }

  // Every listed peer has finished at least `round` rounds.
  bool reached(std::uint64_t round, std::vector<std::uint32_t> ids = {}) {
    if (ids.empty()) {
      for (std::uint32_t i = 0; i < kPeers; ++i) ids.push_back(i);
    }
    return std::all_of(ids.begin(), ids.end(),
                       [&](std::uint32_t i) { return peers_[i]->gate->openRound() >= round; });
  }

  Peer& operator[](std::uint32_t id) { return *peers_[id]; }
  asio::io_context io;

 private:
  std::vector<std::unique_ptr<Peer>> peers_;
};

TEST(Rounds, AllToAllThenCrashRestartPartitionAndHeal) {
  Rounds r;
  ASSERT_TRUE(r.runUntil([&] {
    for (std::uint32_t i = 0; i < kPeers; ++i) {
      if (r[i].transport->livePeers().size() != kPeers - 1) return false;
    }
    return true;
  }));
  r.beginAll();
  // All-to-all: every round of every peer completes with all seven others heard.
  ASSERT_TRUE(r.runUntil([&] { return r.reached(5); }));
  for (std::uint32_t i = 0; i < kPeers; ++i) {
    for (std::size_t k = 0; k < 5; ++k) {
      EXPECT_EQ(r[i].results[k].messages.size(), 7u) << "peer " << i << " round " << k;
      EXPECT_FALSE(r[i].results[k].deadline_hit);
    }
    EXPECT_EQ(r[i].gaps, 0);
  }

  // Peer 7 crashes mid-run: the others finish that round at the deadline, then go on.
  const std::uint16_t port7 = r[7].port;
  r[7].transport->abort();
  r[7].running = false;
  const std::uint64_t at_crash = r[0].gate->openRound();
  const std::vector<std::uint32_t> survivors{0, 1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(r.runUntil([&] { return r.reached(at_crash + 6, survivors); }));
  for (const std::uint32_t i : survivors) {
    const RoundResult& last = r[i].results.back();
    EXPECT_EQ(last.messages.size(), 6u);
    EXPECT_EQ(last.missing, (std::vector<std::uint32_t>{7}));
    EXPECT_FALSE(last.deadline_hit);  // once 7 is known dead, it no longer holds rounds up
    EXPECT_LE(r[i].gate->deadlineMisses(), 2u);
  }

  // Peer 7 restarts on its port with no memory: it adopts the round from heartbeats and every
  // neighbour gets a keyframe from it (and sends it one) before deltas resume.
  r.create(7, port7, 0);
  r[7].adopting = true;
  r.connect(r[7]);
  const std::uint64_t at_restart = r[0].gate->openRound();
  ASSERT_TRUE(r.runUntil([&] {
    if (r[7].results.empty() || r[7].results.back().messages.size() != 7) return false;
    for (const std::uint32_t i : survivors) {
      if (r[i].keyframes_from[7] < 1 || r[7].keyframes_from[i] < 1) return false;
      if (r[i].results.back().messages.size() != 7) return false;
    }
    return true;
  }));
  EXPECT_GE(r[7].results.front().round, at_restart);  // joined at the current round, not at 0

  // Partition {0..3} | {4..7}: each side keeps going on its own, then heals.
  for (std::uint32_t i = 0; i < kPeers; ++i) {
    std::vector<std::uint32_t> other;
    for (std::uint32_t j = 0; j < kPeers; ++j) {
      if ((i < 4) != (j < 4)) other.push_back(j);
    }
    r[i].transport->setPartitioned(other);
  }
  // The partition is real: frames across it are dropped on the way out or on arrival. Rounds
  // never address a cut peer, so what crosses are the transport's heartbeats (every 40 ms);
  // eight rounds on loopback can take less than that, hence both in one wait.
  const auto blocked = [&] {
    std::uint64_t n = 0;
    for (std::uint32_t i = 0; i < kPeers; ++i) n += r[i].transport->partitionDrops();
    return n;
  };
  const std::uint64_t at_split = r[0].gate->openRound();
  ASSERT_TRUE(r.runUntil([&] { return r.reached(at_split + 8) && blocked() > 0; }))
      << "eight rounds on each side: " << r.reached(at_split + 8)
      << ", frames dropped at the cut: " << blocked();
  for (std::uint32_t i = 0; i < kPeers; ++i) {
    for (const auto& [sender, _] : r[i].results.back().messages) {
      EXPECT_EQ(sender < 4, i < 4)
          << "peer " << i << " heard " << sender << " across the partition";
    }
  }
  for (std::uint32_t i = 0; i < kPeers; ++i) r[i].transport->setPartitioned({});
  const std::uint64_t at_heal = r[0].gate->openRound();
  ASSERT_TRUE(r.runUntil([&] {
    if (!r.reached(at_heal + 4)) return false;
    for (std::uint32_t i = 0; i < kPeers; ++i) {
      if (r[i].results.back().messages.size() != 7) return false;
    }
    return true;
  }));
}

// Round claims: the gate of node 0 (neighbours 1, 2, 3; b = 1; last round 99) over live
// connections. One neighbour's claim moves nothing, whatever it says; two neighbours' claims
// move it to the lower of the two (the (b+1)-th highest), never past the last round.
TEST(Rounds, CatchingUpNeedsMoreThanBClaimsAndStopsAtTheLastRound) {
  asio::io_context io;
  std::vector<std::unique_ptr<TcpTransport>> t;
  std::vector<PeerAddress> addresses;
  for (std::uint32_t id = 0; id < 4; ++id) {
    TransportConfig c{.self = id,
                      .cluster_id = "claims",
                      .model_dim = 16,
                      .config_digest = "d",
                      .backoff_initial = 10ms};
    for (std::uint32_t j = 0; j < 4; ++j) {
      if (j != id) c.neighbours.push_back(j);
    }
    t.push_back(std::make_unique<TcpTransport>(io, c, TransportHandlers{}));
    addresses.push_back({id, "127.0.0.1", t.back()->listen()});
  }
  for (auto& x : t) x->connect(addresses);
  ASSERT_TRUE(testing::runUntil(io, [&] { return t[0]->livePeers().size() == 3; }));
  const std::vector<std::uint32_t> neighbours{1, 2, 3};
  AsioClock clock(io);
  RoundGate gate(clock, *t[0], neighbours, GateConfig{.budget = 1, .last_round = 99}, 0);

  for (const std::uint64_t lie :
       {std::uint64_t(1) << 62, std::uint64_t(0), std::uint64_t(50), std::uint64_t(7)}) {
    gate.noteRound(3, lie);  // oscillating: far future, past, ahead
    EXPECT_EQ(gate.evidencedRound(), 0u);
    EXPECT_FALSE(gate.catchUp());
    EXPECT_EQ(gate.openRound(), 0u);
  }
  gate.noteRound(1, 20);  // one honest neighbour ahead, plus the liar's 2^62: the 2nd highest is 20
  EXPECT_EQ(gate.evidencedRound(), 20u);
  EXPECT_TRUE(gate.catchUp());
  EXPECT_EQ(gate.openRound(), 20u);
  gate.noteRound(2, std::uint64_t(1) << 62);  // two liars (more than b): capped at the last round
  EXPECT_EQ(gate.evidencedRound(), 99u);
  // A claim from a node that is not a neighbour counts for nothing.
  RoundGate other(clock, *t[0], neighbours, GateConfig{.budget = 0, .last_round = 99}, 0);
  other.noteRound(7, 40);
  EXPECT_EQ(other.evidencedRound(), 0u);
  for (auto& x : t) x->abort();
}

}  // namespace
}  // namespace phalanx::net
