// Virtual time and the in-memory network: the event order is total and the same for any thread
// count, timers cancel, a frame costs what TCP would write and arrives after latency plus
// serialisation, a crash is seen one latency later, a restart reconnects, the fault wrapper
// drops, delays and partitions.
#include "net/virtual_time.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "net/faulty_transport.h"
#include "net/frame.h"
#include "net/memory_transport.h"

namespace phalanx::net {
namespace {

using namespace std::chrono_literals;

double ms(Clock::TimePoint t) {
  return std::chrono::duration<double, std::milli>(t.time_since_epoch()).count();
}

// Ping-pong chains between actors plus local timers, traced per actor: the trace of every actor
// is the same with 1 and 4 threads.
std::vector<std::vector<std::string>> pingPong(unsigned threads) {
  constexpr std::uint32_t kActors = 6;
  VirtualScheduler s(kActors, 1ms, threads);
  std::vector<std::vector<std::string>> trace(kActors);
  std::vector<std::unique_ptr<Timer>> timers;
  for (std::uint32_t a = 0; a < kActors; ++a) timers.push_back(s.clock(a).timer());
  std::function<void(std::uint32_t, int)> hop = [&](std::uint32_t a, int left) {
    trace[a].push_back(std::to_string(ms(s.clock(a).now())) + ":" + std::to_string(left));
    if (left == 0) return;
    const std::uint32_t next = (a * 7 + std::uint32_t(left)) % kActors;
    s.schedule(a, next, s.clock(a).now() + std::chrono::microseconds(1000 + 137 * left),
               [&hop, next, left] { hop(next, left - 1); });
    s.clock(a).post([&trace, a] { trace[a].push_back("posted"); });
  };
  for (std::uint32_t a = 0; a < kActors; ++a) {
    s.schedule(VirtualScheduler::kOutside, a, Clock::TimePoint(), [&hop, a] { hop(a, 20); });
    timers[a]->start(5ms, [&trace, a] { trace[a].push_back("timer"); });
  }
  timers[3]->cancel();  // never fires
  EXPECT_EQ(s.run(nullptr), VirtualScheduler::Outcome::kIdle);
  return trace;
}

TEST(VirtualTime, TheOrderIsTheSameWhateverTheThreadCount) {
  const auto one = pingPong(1);
  EXPECT_EQ(one, pingPong(4));
  EXPECT_EQ(std::count(one[3].begin(), one[3].end(), "timer"), 0);
  EXPECT_EQ(std::count(one[0].begin(), one[0].end(), "timer"), 1);
}

TEST(VirtualTime, TimersReplaceCancelAndStopAtALimit) {
  VirtualScheduler s(1, 1ms, 1);
  Clock& c = s.clock(0);
  auto t = c.timer();
  std::vector<double> fired;
  s.schedule(VirtualScheduler::kOutside, 0, Clock::TimePoint(), [&] {
    t->start(10ms, [&] { fired.push_back(ms(c.now())); });
    t->start(20ms, [&] { fired.push_back(ms(c.now())); });  // replaces the first
  });
  EXPECT_EQ(s.run(nullptr, Clock::TimePoint(15ms)), VirtualScheduler::Outcome::kTimeLimit);
  EXPECT_TRUE(fired.empty());
  EXPECT_EQ(s.run(nullptr), VirtualScheduler::Outcome::kIdle);
  EXPECT_EQ(fired, std::vector<double>{20.0});
  EXPECT_THROW(VirtualScheduler(1, 0ms), std::invalid_argument);
}

struct Endpoint {
  std::unique_ptr<Transport> transport;
  std::vector<std::pair<double, std::string>> events;  // (ms, what)
};

TransportConfig configFor(std::uint32_t self, std::vector<std::uint32_t> neighbours) {
  return {.self = self,
          .model_dim = 8,
          .config_digest = "d",
          .neighbours = std::move(neighbours),
          .heartbeat_every = 250ms};
}

TransportHandlers record(Endpoint& e, Clock& c) {
  return {
      .on_round =
          [&e, &c](std::uint32_t p, Received& m) {
            e.events.push_back(
                {ms(c.now()), "round " + std::to_string(p) + " " + m.whole().payload()});
          },
      .on_up =
          [&e, &c](std::uint32_t p) {
            e.events.push_back({ms(c.now()), "up " + std::to_string(p)});
          },
      .on_down =
          [&e, &c](std::uint32_t p, std::string_view why) {
            e.events.push_back({ms(c.now()), "down " + std::to_string(p) + " " + std::string(why)});
          }};
}

TEST(MemoryTransport, FramesCostWhatTcpWritesAndArriveAfterLatencyAndSerialisation) {
  VirtualScheduler s(2, 2ms, 1);
  LinkTable links{.fallback = {.latency = 2ms, .megabits_per_second = 8}};  // 1 byte per µs
  MemoryNetwork network(s, {{0, 0}, {1, 1}}, links);
  Endpoint a, b;
  a.transport = network.transport(configFor(0, {1}), record(a, s.clock(0)));
  b.transport = network.transport(configFor(1, {0}), record(b, s.clock(1)));
  a.transport->connect({});
  b.transport->connect({});
  s.run(nullptr, Clock::TimePoint(100ms));
  ASSERT_EQ(a.transport->livePeers(), std::vector<std::uint32_t>{1});
  const auto payload = std::make_shared<const std::vector<std::uint8_t>>(1000, 'x');
  v1::RoundMessage header;
  header.set_round(1);
  header.set_sender(0);
  header.set_sequence(1);
  header.set_kind(v1::RoundMessage::KEYFRAME);
  const std::uint64_t sent_before = a.transport->stats().peers.at(1).bytes_sent;
  s.schedule(VirtualScheduler::kOutside, 0, Clock::TimePoint(100ms), [&] {
    EXPECT_TRUE(a.transport->sendRound(1, header, payload));
    EXPECT_FALSE(a.transport->sendRound(7, header, payload));  // not a neighbour: dropped
  });
  s.run(nullptr, Clock::TimePoint(200ms));
  std::vector<std::uint8_t> head;
  appendRoundFrameHead(header, payload->size(), head);
  const std::size_t frame = head.size() + payload->size();
  EXPECT_EQ(a.transport->stats().peers.at(1).bytes_sent - sent_before, frame);
  const auto it = std::find_if(b.events.begin(), b.events.end(),
                               [](const auto& e) { return e.second.starts_with("round 0"); });
  ASSERT_NE(it, b.events.end());
  EXPECT_NEAR(it->first, 100 + 2 + double(frame) / 1000.0, 1e-6);  // latency + bytes at 1 B/µs
  EXPECT_EQ(it->second, "round 0 " + std::string(1000, 'x'));
}

// One envelope for several peers (sendShared): each receives the same message and the link
// counts the frame TCP would write, as send does; to a peer that is not up, nothing.
TEST(MemoryTransport, ASharedEnvelopeCostsAndArrivesAsACopyWould) {
  VirtualScheduler s(3, 1ms, 1);
  MemoryNetwork network(s, {{0, 0}, {1, 1}, {2, 2}}, LinkTable{.fallback = {.latency = 1ms}});
  Endpoint a, b, c;
  std::vector<std::string> heard;
  TransportHandlers to_b = record(b, s.clock(1)), to_c = record(c, s.clock(2));
  to_b.on_digest = [&heard](std::uint32_t p, const v1::RoundDigest& d) {
    heard.push_back("b from " + std::to_string(p) + ": " + d.hashes(0));
  };
  to_c.on_digest = [&heard](std::uint32_t p, const v1::RoundDigest& d) {
    heard.push_back("c from " + std::to_string(p) + ": " + d.hashes(0));
  };
  a.transport = network.transport(configFor(0, {1, 2}), record(a, s.clock(0)));
  b.transport = network.transport(configFor(1, {0}), std::move(to_b));
  c.transport = network.transport(configFor(2, {0}), std::move(to_c));
  for (auto* e : {&a, &b, &c}) e->transport->connect({});
  s.run(nullptr, Clock::TimePoint(100ms));
  v1::Envelope envelope;
  envelope.mutable_digest()->set_round(3);
  envelope.mutable_digest()->add_hashes(std::string(32, 'h'));
  const auto shared = std::make_shared<const v1::Envelope>(envelope);
  const auto sent = [&](std::uint32_t peer) {
    return a.transport->stats().peers.at(peer).bytes_sent;
  };
  const std::uint64_t b0 = sent(1), c0 = sent(2);
  s.schedule(VirtualScheduler::kOutside, 0, Clock::TimePoint(100ms), [&] {
    EXPECT_TRUE(a.transport->send(1, envelope));
    EXPECT_TRUE(a.transport->sendShared(1, shared));
    EXPECT_TRUE(a.transport->sendShared(2, shared));
    EXPECT_FALSE(a.transport->sendShared(9, shared));  // not up: dropped, counted
  });
  s.run(nullptr, Clock::TimePoint(200ms));
  const std::uint64_t frame = 4 + envelope.ByteSizeLong();  // length prefix, then the envelope
  EXPECT_EQ(sent(1) - b0, 2 * frame);
  EXPECT_EQ(sent(2) - c0, frame);
  EXPECT_EQ(a.transport->stats().peers.at(9).dropped_sends, 1u);
  std::sort(heard.begin(), heard.end());
  const std::string h(32, 'h');
  EXPECT_EQ(heard,
            (std::vector<std::string>{"b from 0: " + h, "b from 0: " + h, "c from 0: " + h}));
}

// The receivers of one payload share one PayloadChecks (what the first checked of the bytes
// stands for the others); another payload, even to the same peer, gets its own.
TEST(MemoryTransport, ReceiversOfOnePayloadShareItsChecks) {
  VirtualScheduler s(3, 1ms, 1);
  MemoryNetwork network(s, {{0, 0}, {1, 1}, {2, 2}}, LinkTable{.fallback = {.latency = 1ms}});
  Endpoint a, b, c;
  std::vector<std::pair<std::string, PayloadChecks*>> seen;  // (payload, its checks)
  const auto watching = [&seen](Endpoint& e, Clock& clock) {
    TransportHandlers h = record(e, clock);
    h.on_round = [&seen](std::uint32_t, Received& m) {
      seen.emplace_back(std::string(m.payload().begin(), m.payload().end()), m.checks());
    };
    return h;
  };
  a.transport = network.transport(configFor(0, {1, 2}), record(a, s.clock(0)));
  b.transport = network.transport(configFor(1, {0}), watching(b, s.clock(1)));
  c.transport = network.transport(configFor(2, {0}), watching(c, s.clock(2)));
  for (auto* e : {&a, &b, &c}) e->transport->connect({});
  s.run(nullptr, Clock::TimePoint(100ms));
  const auto bytes = [](std::string text) {
    return std::make_shared<const std::vector<std::uint8_t>>(text.begin(), text.end());
  };
  const auto p = bytes("p"), q = bytes("q");
  s.schedule(VirtualScheduler::kOutside, 0, Clock::TimePoint(100ms), [&] {
    v1::RoundMessage header;
    header.set_round(1);
    header.set_kind(v1::RoundMessage::KEYFRAME);
    EXPECT_TRUE(a.transport->sendRound(1, header, p));
    EXPECT_TRUE(a.transport->sendRound(2, header, p));
    EXPECT_TRUE(a.transport->sendRound(1, header, q));
  });
  s.run(nullptr, Clock::TimePoint(200ms));
  ASSERT_EQ(seen.size(), 3u);
  std::map<std::string, std::set<PayloadChecks*>> by_payload;
  for (const auto& [text, checks] : seen) {
    EXPECT_NE(checks, nullptr);
    by_payload[text].insert(checks);
  }
  ASSERT_EQ(by_payload.size(), 2u);
  EXPECT_EQ(by_payload["p"].size(), 1u);  // b and c: one
  EXPECT_NE(*by_payload["p"].begin(), *by_payload["q"].begin());
}

// Sends `count` round messages from 0 to 1 over `link`, message r at start + (r-1)·spacing
// (payload: r and `pad` spaces); their arrival times at 1 in ms, in arrival order, with the round
// each carried.
std::vector<std::pair<double, std::uint64_t>> arrivals(const LinkModel& link, int count,
                                                       std::chrono::milliseconds spacing,
                                                       std::size_t pad = 0,
                                                       std::chrono::milliseconds start = 100ms) {
  VirtualScheduler s(2, link.latency - link.jitter, 1);
  MemoryNetwork network(s, {{0, 0}, {1, 1}}, LinkTable{.fallback = link, .seed = 7});
  Endpoint a, b;
  // No heartbeats after the first: on a lossy link they would hold the frames behind them.
  TransportConfig config_a = configFor(0, {1}), config_b = configFor(1, {0});
  config_a.heartbeat_every = config_b.heartbeat_every = 1h;
  a.transport = network.transport(config_a, record(a, s.clock(0)));
  b.transport = network.transport(config_b, record(b, s.clock(1)));
  a.transport->connect({});
  b.transport->connect({});
  s.run(nullptr, Clock::TimePoint(start));
  for (int r = 1; r <= count; ++r) {
    s.schedule(VirtualScheduler::kOutside, 0, Clock::TimePoint(start + (r - 1) * spacing), [&, r] {
      v1::RoundMessage header;
      header.set_round(std::uint64_t(r));
      header.set_sender(0);
      header.set_sequence(std::uint64_t(r));
      header.set_kind(v1::RoundMessage::KEYFRAME);
      const std::string text = std::to_string(r) + std::string(pad, ' ');
      EXPECT_TRUE(a.transport->sendRound(
          1, header, std::make_shared<const std::vector<std::uint8_t>>(text.begin(), text.end())));
    });
  }
  s.run(nullptr, Clock::TimePoint(10s));
  std::vector<std::pair<double, std::uint64_t>> out;
  for (const auto& [at, what] : b.events) {
    if (what.starts_with("round 0 ")) out.push_back({at, std::stoull(what.substr(8))});
  }
  return out;
}

TEST(MemoryTransport, JitterSpreadsArrivalsButKeepsTheLinksOrder) {
  // Spaced 20 ms apart, each frame's delay is its own draw in latency ± jitter.
  const auto spaced = arrivals({.latency = 10ms, .jitter = 4ms}, 50, 20ms);
  ASSERT_EQ(spaced.size(), 50u);
  double low = 1e9, high = 0;
  for (std::size_t i = 0; i < spaced.size(); ++i) {
    const double delay = spaced[i].first - (100 + 20 * double(i));
    EXPECT_GE(delay, 6 - 1e-9);
    EXPECT_LE(delay, 14 + 1e-9);
    low = std::min(low, delay);
    high = std::max(high, delay);
  }
  EXPECT_GT(high - low, 4.0);  // the draws do spread them
  EXPECT_EQ(arrivals({.latency = 10ms, .jitter = 4ms}, 50, 20ms), spaced);  // seeded: reruns agree
  // Sent at once, they still arrive in the order sent, as TCP delivers.
  const auto burst = arrivals({.latency = 10ms, .jitter = 4ms}, 50, 0ms);
  ASSERT_EQ(burst.size(), 50u);
  for (std::size_t i = 0; i < burst.size(); ++i) {
    EXPECT_EQ(burst[i].second, i + 1);
    if (i > 0) {
      EXPECT_GE(burst[i].first, burst[i - 1].first);
    }
  }
}

TEST(MemoryTransport, ALostSegmentCostsATimeoutForAShortFrame) {
  const auto got = arrivals({.latency = 10ms, .loss = 0.3}, 40, 0ms);
  ASSERT_EQ(got.size(), 40u);
  int delayed = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].second, i + 1);
    // On time (100 + 10 ms), or held behind a frame that waited for its 200 ms timeout.
    const bool on_time = std::abs(got[i].first - 110) < 1e-6;
    EXPECT_TRUE(on_time || got[i].first >= 310 - 1e-6) << got[i].first;
    delayed += on_time ? 0 : 1;
  }
  EXPECT_GT(delayed, 0);
  EXPECT_LT(delayed, 40);
  // A frame of 4 segments or more is repaired by fast retransmit: one round trip (20 ms) late.
  // (Sent at 2 s: the handshake's short frames wait out their own timeouts first.)
  const auto large = arrivals({.latency = 10ms, .loss = 0.999}, 1, 0ms, 10'000, 2s);
  ASSERT_EQ(large.size(), 1u);
  EXPECT_NEAR(large[0].first, 2000 + 10 + 20, 1e-6);
  const auto small = arrivals({.latency = 10ms, .loss = 0.999}, 1, 0ms, 0, 2s);
  ASSERT_EQ(small.size(), 1u);
  EXPECT_NEAR(small[0].first, 2000 + 10 + 200, 1e-6);
}

TEST(MemoryTransport, ACrashIsSeenOneLatencyLaterAndARestartReconnects) {
  VirtualScheduler s(2, 3ms, 1);
  MemoryNetwork network(s, {{0, 0}, {1, 1}}, LinkTable{.fallback = {.latency = 3ms}});
  Endpoint a, b;
  a.transport = network.transport(configFor(0, {1}), record(a, s.clock(0)));
  b.transport = network.transport(configFor(1, {0}), record(b, s.clock(1)));
  a.transport->connect({});
  b.transport->connect({});
  s.schedule(VirtualScheduler::kOutside, 1, Clock::TimePoint(50ms), [&] { b.transport->abort(); });
  s.run(nullptr, Clock::TimePoint(60ms));
  ASSERT_FALSE(a.events.empty());
  EXPECT_EQ(a.events.back(),
            (std::pair<double, std::string>{53, "down 1 connection reset by peer"}));
  s.schedule(VirtualScheduler::kOutside, 1, Clock::TimePoint(70ms), [&] {
    b.transport = network.transport(configFor(1, {0}), record(b, s.clock(1)));
    b.transport->connect({});
  });
  s.run(nullptr, Clock::TimePoint(100ms));
  EXPECT_EQ(a.events.back(), (std::pair<double, std::string>{73, "up 1"}));
  EXPECT_EQ(b.transport->livePeers(), std::vector<std::uint32_t>{0});
  // A Hello from a stranger (or with another digest) opens nothing.
  Endpoint c;
  auto other = configFor(1, {0});
  other.config_digest = "another";
  s.schedule(VirtualScheduler::kOutside, 1, Clock::TimePoint(120ms), [&] {
    b.transport->abort();
    c.transport = network.transport(other, record(c, s.clock(1)));
    c.transport->connect({});
  });
  s.run(nullptr, Clock::TimePoint(200ms));
  EXPECT_TRUE(a.transport->livePeers().empty());
  EXPECT_EQ(a.transport->stats().rejected.at(Refusal::kWrongDigest), 1u);
}

TEST(FaultyTransport, DropsDelaysAndPartitionsAroundAnyTransport) {
  VirtualScheduler s(2, 1ms, 1);
  MemoryNetwork network(s, {{0, 0}, {1, 1}}, LinkTable{.fallback = {.latency = 1ms}});
  Endpoint b;
  std::vector<std::string> a_events;
  Clock& ca = s.clock(0);
  FaultyTransport a(
      ca,
      {.on_up = [&](std::uint32_t p) { a_events.push_back("up " + std::to_string(p)); },
       .on_down =
           [&](std::uint32_t p, std::string_view why) {
             a_events.push_back("down " + std::to_string(p) + " " + std::string(why));
           }},
      [&](TransportHandlers h) { return network.transport(configFor(0, {1}), std::move(h)); }, 1);
  b.transport = network.transport(configFor(1, {0}), record(b, s.clock(1)));
  a.connect({});
  b.transport->connect({});
  s.run(nullptr, Clock::TimePoint(10ms));
  const auto send = [&](double at_ms, const std::string& text) {
    s.schedule(VirtualScheduler::kOutside, 0,
               Clock::TimePoint(std::chrono::microseconds(std::int64_t(at_ms * 1000))), [&a, text] {
                 v1::RoundMessage h;
                 h.set_round(1);
                 h.set_sender(0);
                 h.set_sequence(1);
                 h.set_kind(v1::RoundMessage::KEYFRAME);
                 a.sendRound(
                     1, h,
                     std::make_shared<const std::vector<std::uint8_t>>(text.begin(), text.end()));
               });
  };
  s.schedule(VirtualScheduler::kOutside, 0, Clock::TimePoint(20ms), [&] { a.setDelay(5ms); });
  send(20, "late");
  s.schedule(VirtualScheduler::kOutside, 0, Clock::TimePoint(30ms), [&] {
    a.setDelay(0ms);
    a.setDrop(1.0);
  });
  send(30, "lost");
  s.schedule(VirtualScheduler::kOutside, 0, Clock::TimePoint(40ms), [&] {
    a.heal();
    a.setPartitioned({1});
  });
  send(40, "cut");
  s.schedule(VirtualScheduler::kOutside, 0, Clock::TimePoint(50ms), [&] { a.heal(); });
  send(50, "healed");
  s.run(nullptr, Clock::TimePoint(100ms));
  std::vector<std::pair<double, std::string>> rounds;
  for (const auto& e : b.events) {
    if (e.second.starts_with("round")) rounds.push_back(e);
  }
  EXPECT_EQ(rounds, (std::vector<std::pair<double, std::string>>{{26, "round 0 late"},
                                                                 {51, "round 0 healed"}}));
  EXPECT_EQ(a_events, (std::vector<std::string>{"up 1", "down 1 partitioned", "up 1"}));
  EXPECT_EQ(a.partitionDrops(), 1u + 0u);  // the cut send (b's heartbeats come every 250 ms)
}

}  // namespace
}  // namespace phalanx::net
