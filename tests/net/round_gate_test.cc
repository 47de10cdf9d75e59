// RoundGate's deadline in virtual time: it learns when each round's honest quorum is in (its
// (deg − b)-th arrival, late ones included, once per round), so neither b stragglers nor a
// deadline that fell below the neighbours' pace set it.
#include "net/round_gate.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <vector>

#include "net/transport.h"
#include "net/virtual_time.h"

namespace phalanx::net {
namespace {

using namespace std::chrono_literals;

// Runs `task` in the one actor's turn at `at`, after every event due before it (timers included).
void runAt(VirtualScheduler& s, std::chrono::milliseconds at, std::function<void()> task) {
  const Clock::TimePoint when(at);
  s.schedule(VirtualScheduler::kOutside, 0, when, std::move(task));
  s.run(nullptr, when);
}

// Every neighbour connected; nothing is sent.
class AllLive final : public Transport {
 public:
  explicit AllLive(std::vector<std::uint32_t> peers) : peers_(std::move(peers)) {}
  std::uint16_t listen() override { return 0; }
  void connect(std::vector<PeerAddress>) override {}
  bool send(std::uint32_t, const v1::Envelope&) override { return false; }
  bool sendRound(std::uint32_t, const v1::RoundMessage&, Payload) override { return false; }
  void setRound(std::uint64_t) override {}
  std::vector<std::uint32_t> livePeers() const override { return peers_; }
  void setLive(std::vector<std::uint32_t> peers) { peers_ = std::move(peers); }
  const TransportStats& stats() const override { return stats_; }
  void stop() override {}
  void abort() override {}

 private:
  std::vector<std::uint32_t> peers_;
  TransportStats stats_;
};

v1::RoundMessage message(std::uint32_t sender, std::uint64_t round) {
  v1::RoundMessage m;
  m.set_sender(sender);
  m.set_round(round);
  m.set_kind(v1::RoundMessage::KEYFRAME);
  return m;
}

// Hands `gate` each sender's message for `round`.
void addFrom(RoundGate& gate, std::initializer_list<std::uint32_t> senders, std::uint64_t round) {
  for (const std::uint32_t j : senders) gate.add(message(j, round));
}

TEST(RoundGate, TheDeadlineLearnsWhenTheQuorumIsInAndLateArrivalsTeachItOncePerRound) {
  // deg 3, b = 1: each round teaches one offset, its second arrival's (deg − b).
  const std::vector<std::uint32_t> neighbours{1, 2, 3};
  VirtualScheduler scheduler(1, 1ms, 1);
  AllLive transport(neighbours);
  // Window 1: only the last closed round's late arrivals count.
  RoundGate gate(
      scheduler.clock(0), transport, neighbours,
      GateConfig{
          .deadline = {.fixed_ms = 1000, .adaptive = true, .k = 2, .min_ms = 1, .min_samples = 1},
          .budget = 1,
          .window = 1},
      0);
  std::vector<RoundResult> results;
  const auto record = [&](RoundResult&& r) { results.push_back(std::move(r)); };
  double deadline = 0;
  const auto deadlineNow = [&] { deadline = gate.deadlineMs(); };

  // Round 0: everyone at 10 ms: one sample, 10; the deadline is 10 ms.
  runAt(scheduler, 0ms, [&] { gate.wait(record); });
  runAt(scheduler, 10ms, [&] {
    for (const std::uint32_t j : neighbours) gate.add(message(j, 0));
    deadlineNow();
    // Round 1: the neighbours now take 100 ms; the round closes at 10 ms without them.
    gate.wait(record);
  });
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].closed, Close::kComplete);
  EXPECT_DOUBLE_EQ(deadline, 10);
  EXPECT_EQ(gate.deadlineOffsets(), std::vector<double>{10});

  runAt(scheduler, 110ms, [&] {
    ASSERT_EQ(results.size(), 2u);
    EXPECT_TRUE(results[1].deadline_hit);
    EXPECT_EQ(results[1].missing, neighbours);
    // A sender heard in time adds nothing late; the round's first late arrival is not its
    // quorum's, however often it is resent.
    gate.noteLate(2, 0);
    for (int i = 0; i < 3; ++i) gate.noteLate(1, 1);
    EXPECT_DOUBLE_EQ(gate.deadlineMs(), 10);
    // The second is: {10, 100}, median 55, MAD 45 -> 55 + 2 * 45.
    gate.noteLate(2, 1);
    EXPECT_DOUBLE_EQ(gate.deadlineMs(), 145);
    // The third is among the round's b latest: it teaches nothing.
    gate.noteLate(3, 1);
    EXPECT_EQ(gate.deadlineOffsets(), (std::vector<double>{10, 100}));
    // The next round waits long enough for them again.
    gate.wait(record);
  });
  runAt(scheduler, 210ms, [&] {
    for (const std::uint32_t j : neighbours) gate.add(message(j, 2));
  });
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[2].closed, Close::kComplete);

  // Round 1 is now out of the window: a late message for it teaches nothing.
  runAt(scheduler, 220ms, [&] {
    const double before = gate.deadlineMs();
    gate.noteLate(1, 1);
    gate.noteLate(1, 0);
    EXPECT_DOUBLE_EQ(gate.deadlineMs(), before);
  });
}

TEST(RoundGate, AStallerHalfOfARingNodesNeighboursDoesNotSetItsDeadline) {
  // deg 2, b = 1 (a ring): the quorum is b + 1 = both, so every round waits for the staller
  // (900 ms) until the deadline. Fed the staller's offsets, the median was half way to it; fed
  // only each round's first arrival, the deadline follows the honest neighbour (10, 12 or 14 ms:
  // a median of 11 or 12 and a MAD of 1 or 2, so 19 to 28 ms).
  const std::vector<std::uint32_t> neighbours{1, 2};
  VirtualScheduler scheduler(1, 1ms, 1);
  AllLive transport(neighbours);
  RoundGate gate(
      scheduler.clock(0), transport, neighbours,
      GateConfig{
          .deadline = {.fixed_ms = 1000, .adaptive = true, .k = 8, .min_ms = 1, .min_samples = 2},
          .quorum = 2,
          .budget = 1},
      0);
  std::vector<RoundResult> results;
  const auto record = [&](RoundResult&& r) { results.push_back(std::move(r)); };
  // What the node does with a message: into the open round, or noted late.
  const auto arrive = [&](std::uint32_t sender, std::uint64_t round) {
    if (results.size() == round)
      gate.add(message(sender, round));
    else
      gate.noteLate(sender, round);
  };
  constexpr auto kStaller = 900ms;  // when the staller's message comes, in virtual time
  std::chrono::milliseconds opened = 0ms;
  for (std::uint64_t round = 0; round < 8; ++round) {
    runAt(scheduler, opened, [&] { gate.wait(record); });
    runAt(scheduler, opened + 10ms + 2ms * (round % 3), [&] { arrive(1, round); });
    runAt(scheduler, opened + kStaller, [&] { arrive(2, round); });
    ASSERT_EQ(results.size(), round + 1);
    opened += std::chrono::milliseconds(std::int64_t(std::ceil(results.back().seconds * 1000)));
    opened += kStaller;  // past the staller's message
  }
  // Two rounds at the staller's pace (the estimator had too few samples), then deadlines.
  EXPECT_EQ(results[0].closed, Close::kComplete);
  EXPECT_EQ(results[1].closed, Close::kComplete);
  for (std::size_t r = 2; r < results.size(); ++r) {
    EXPECT_TRUE(results[r].deadline_hit) << r;
    EXPECT_TRUE(results[r].messages.contains(1)) << r;
    // Closed at its deadline, learned from the honest offsets: 11 or 12 + 8 MADs of 1 or 2.
    EXPECT_LE(results[r].seconds * 1000, 12 + 8 * 2) << r;
    EXPECT_LT(results[r].seconds * 1000, double(kStaller.count())) << r;
  }
  EXPECT_EQ(gate.deadlineOffsets(), (std::vector<double>{10, 12, 14, 10, 12, 14, 10, 12}));
}

TEST(RoundGate, ARoundWhoseQuorumWasInAtItsOpenTeachesNothingOneItWaitsForTeachesZero) {
  const std::vector<std::uint32_t> neighbours{1, 2};
  VirtualScheduler scheduler(1, 1ms, 1);
  AllLive transport(neighbours);
  RoundGate gate(
      scheduler.clock(0), transport, neighbours,
      GateConfig{.deadline = {.fixed_ms = 1000, .adaptive = true, .min_ms = 1}, .budget = 1}, 0);
  std::vector<RoundResult> results;
  const auto record = [&](RoundResult&& r) { results.push_back(std::move(r)); };
  runAt(scheduler, 0ms, [&] { gate.wait(record); });
  runAt(scheduler, 10ms, [&] {
    addFrom(gate, {1, 2}, 0);
    // Both of round 1's messages are in before it opens: the node was behind.
    addFrom(gate, {1, 2}, 1);
    gate.wait(record);
  });
  ASSERT_EQ(results.size(), 2u);
  runAt(scheduler, 20ms, [&] {
    // One of round 2's is in before it opens: the round waits for the other, and the first
    // arrival came at offset 0.
    addFrom(gate, {1}, 2);
    gate.wait(record);
  });
  runAt(scheduler, 30ms, [&] { addFrom(gate, {2}, 2); });
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(gate.deadlineOffsets(), (std::vector<double>{10, 0}));
}

// The pace floor: a round the quorum closes lasts at least pace_fraction times the median of the
// recent complete or quorum rounds, so a node whose quorum came early waits for the vector it
// would have skipped; deadline rounds do not raise the floor.
TEST(RoundGate, PaceFloorHoldsAnEarlyQuorumToTheRecentPace) {
  const std::vector<std::uint32_t> neighbours{1, 2, 3};
  VirtualScheduler scheduler(1, 1ms, 1);
  AllLive transport(neighbours);
  const auto config = [](double pace) {
    return GateConfig{.deadline = {.fixed_ms = 1000},
                      .quorum = 2,
                      .grace_fraction = 0.25,
                      .pace_fraction = pace,
                      .pace_history = 16,
                      .pace_min_samples = 4};
  };
  RoundGate floored(scheduler.clock(0), transport, neighbours, config(0.9), 0);
  RoundGate plain(scheduler.clock(0), transport, neighbours, config(0), 0);
  std::vector<RoundResult> a, b;
  const auto open = [&](std::chrono::milliseconds at) {
    runAt(scheduler, at, [&] {
      floored.wait([&](RoundResult&& r) { a.push_back(std::move(r)); });
      plain.wait([&](RoundResult&& r) { b.push_back(std::move(r)); });
    });
  };
  const auto say = [&](std::chrono::milliseconds at, std::uint32_t sender, std::uint64_t round) {
    runAt(scheduler, at, [&, sender, round] {
      floored.add(message(sender, round));
      plain.add(message(sender, round));
    });
  };

  // Rounds 0-4 every 100 ms, everyone at the end: the pace (rounds 1-4, not the first) is 100.
  for (std::uint64_t r = 0; r < 5; ++r) {
    const auto t0 = std::chrono::milliseconds(100 * r);
    open(t0);
    for (const std::uint32_t j : neighbours) say(t0 + 100ms, j, r);
  }
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(b.size(), 5u);

  // Round 5 opens at 500: two at 10 ms, the third at 80 ms. Without the floor the grace ends
  // at 12.5 ms and the third is skipped; with it the round waits to 90 ms and hears all three.
  open(500ms);
  say(510ms, 1, 5);
  say(510ms, 2, 5);
  runAt(scheduler, 520ms, [&] {
    ASSERT_EQ(b.size(), 6u);
    EXPECT_EQ(b[5].closed, Close::kQuorum);
    EXPECT_EQ(b[5].missing, std::vector<std::uint32_t>{3});
    EXPECT_DOUBLE_EQ(b[5].seconds, 0.0125);
    EXPECT_EQ(a.size(), 5u);
  });
  say(580ms, 3, 5);
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a[5].closed, Close::kComplete);
  EXPECT_TRUE(a[5].missing.empty());

  // Round 6 opens at 580 for both: the third never comes; the floor closes it at 90 ms.
  open(580ms);
  say(590ms, 1, 6);
  say(590ms, 2, 6);
  runAt(scheduler, 700ms, [&] {
    ASSERT_EQ(a.size(), 7u);
    EXPECT_EQ(a[6].closed, Close::kQuorum);
    EXPECT_DOUBLE_EQ(a[6].seconds, 0.09);  // pace {100 x4, 80}: median 100
  });

  // Round 7: nobody speaks, the deadline closes it at 1000 ms and does not count as pace.
  open(700ms);
  runAt(scheduler, 1800ms, [&] {
    ASSERT_EQ(a.size(), 8u);
    EXPECT_EQ(a[7].closed, Close::kDeadline);
  });
  open(1800ms);
  say(1810ms, 1, 8);
  say(1810ms, 2, 8);
  runAt(scheduler, 2000ms, [&] {
    ASSERT_EQ(a.size(), 9u);
    EXPECT_DOUBLE_EQ(a[8].seconds, 0.09);  // pace {100 x4, 80, 90}: median still 100
  });
}

// A gate over neighbours 1..4 (deadline 1 s) whose round 0 completed at 10 ms with all four
// heard — the first round takes no quorum — and round 1 open.
struct FourNeighbours {
  FourNeighbours(std::size_t quorum, std::size_t budget)
      : gate(scheduler.clock(0), transport, neighbours,
             GateConfig{.deadline = {.fixed_ms = 1000}, .quorum = quorum, .budget = budget}, 0) {
    runAt(scheduler, 0ms, [&] { gate.wait(record); });
    runAt(scheduler, 10ms, [&] {
      addFrom(gate, {1, 2, 3, 4}, 0);
      gate.wait(record);
    });
  }
  std::vector<std::uint32_t> neighbours{1, 2, 3, 4};
  VirtualScheduler scheduler{1, 1ms, 1};
  AllLive transport{neighbours};
  RoundGate gate;
  std::vector<RoundResult> results;
  std::function<void(RoundResult&&)> record = [this](RoundResult&& r) {
    results.push_back(std::move(r));
  };
};

// The quorum is deg − b over the live neighbours: a crashed neighbour does not use up the room
// left for b stragglers (at least b + 1 still).
TEST(RoundGate, QuorumCountsOnlyLiveNeighbours) {
  FourNeighbours four(3, 1);
  auto& scheduler = four.scheduler;
  auto& gate = four.gate;
  auto& results = four.results;
  auto& record = four.record;
  auto& transport = four.transport;
  ASSERT_EQ(results.size(), 1u);

  // Round 1, all live: two of four are not a quorum of three; the deadline closes it.
  runAt(scheduler, 20ms, [&] { addFrom(gate, {1, 2}, 1); });
  runAt(scheduler, 1010ms, [&] {
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[1].closed, Close::kDeadline);
    // Round 2: neighbour 4 is down. Three live, b = 1: two are a quorum.
    transport.setLive({1, 2, 3});
    gate.wait(record);
  });
  runAt(scheduler, 1020ms, [&] { addFrom(gate, {1, 2}, 2); });
  // Two down: the quorum stays at b + 1 = 2, which the one live neighbour cannot meet alone
  // (it could be the liar); the round completes, as before, once every live one has spoken.
  runAt(scheduler, 1100ms, [&] {
    ASSERT_EQ(results.size(), 3u);
    EXPECT_EQ(results[2].closed, Close::kQuorum);
    EXPECT_DOUBLE_EQ(results[2].seconds, 0.0125);  // 10 ms and its grace of a quarter
    transport.setLive({1});
    gate.wait(record);
  });
  runAt(scheduler, 1110ms, [&] { gate.add(message(1, 3)); });
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[3].closed, Close::kComplete);
}

// While every awaited neighbour is live the configured quorum stands, even above awaited − b: a
// Byzantine node awaits only its honest neighbours, and its quorum (deg − b of all of them)
// is not lowered for the fellow attackers it does not wait for.
TEST(RoundGate, AllLiveKeepsTheConfiguredQuorum) {
  FourNeighbours four(4, 2);
  auto& scheduler = four.scheduler;
  auto& gate = four.gate;
  auto& results = four.results;
  // Three of four: not the quorum of four, so the deadline closes the round.
  runAt(scheduler, 20ms, [&] { addFrom(gate, {1, 2, 3}, 1); });
  runAt(scheduler, 1100ms, [&] {
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[1].closed, Close::kDeadline);
  });
}

// A peer holding its round's start waits on the gate instead of polling: woken once, on the
// clock, by the next message in, the next round a neighbour claims, or a poke (a link down);
// a rejected message and a claim it already knew wake nobody; cancel() drops the wake.
TEST(RoundGate, WhenChangedWakesOnceOnTheNextChange) {
  FourNeighbours four(3, 1);
  auto& scheduler = four.scheduler;
  auto& gate = four.gate;
  int woken = 0;
  const auto wake = [&] { ++woken; };
  runAt(scheduler, 20ms, [&] {
    gate.whenChanged(wake);
    gate.add(message(9, 1));  // from no neighbour: rejected, no news
    EXPECT_EQ(woken, 0);
    gate.noteRound(1, 1);  // neighbour 1 claims round 1: news
    gate.noteRound(2, 1);  // news too, but the wake was used up
  });
  runAt(scheduler, 30ms, [&] {
    EXPECT_EQ(woken, 1);  // posted, run on the clock
    gate.whenChanged(wake);
    gate.noteRound(1, 1);     // known already
    gate.add(message(9, 1));  // rejected
  });
  runAt(scheduler, 40ms, [&] {
    EXPECT_EQ(woken, 1);
    gate.add(message(2, 1));  // accepted
  });
  runAt(scheduler, 50ms, [&] {
    EXPECT_EQ(woken, 2);
    gate.whenChanged(wake);
    gate.poke();
    gate.poke();
  });
  runAt(scheduler, 60ms, [&] {
    EXPECT_EQ(woken, 3);
    gate.whenChanged(wake);
    gate.cancel();
    gate.add(message(3, 1));
  });
  runAt(scheduler, 70ms, [&] { EXPECT_EQ(woken, 3); });
}

}  // namespace
}  // namespace phalanx::net
