// RoundGate's deadline in virtual time: arrivals that come after a round closed still
// teach the estimator, once per (round, sender), so a deadline that fell below the neighbours'
// pace rises again instead of leaving the node to run ahead of them alone.
#include "net/round_gate.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
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

TEST(RoundGate, LateArrivalsRaiseTheDeadlineOncePerRoundAndSender) {
  const std::vector<std::uint32_t> neighbours{1, 2, 3};
  VirtualScheduler scheduler(1, 1ms, 1);
  AllLive transport(neighbours);
  // Window 1: only the last closed round's late arrivals count.
  RoundGate gate(
      scheduler.clock(0), transport, neighbours,
      GateConfig{
          .deadline = {.fixed_ms = 1000, .adaptive = true, .k = 2, .min_ms = 1, .min_samples = 3},
          .window = 1},
      0);
  std::vector<RoundResult> results;
  const auto record = [&](RoundResult&& r) { results.push_back(std::move(r)); };
  double deadline = 0;
  const auto deadlineNow = [&] { deadline = gate.deadlineMs(); };

  // Round 0: everyone at 10 ms. Median 10, MAD 0: the deadline is 10 ms.
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

  runAt(scheduler, 110ms, [&] {
    ASSERT_EQ(results.size(), 2u);
    EXPECT_TRUE(results[1].deadline_hit);
    EXPECT_EQ(results[1].missing, neighbours);
    // A sender heard in time adds nothing late; one resending its late message counts once:
    // samples {10, 10, 10, 100}, median 10, MAD 0.
    gate.noteLate(2, 0);
    for (int i = 0; i < 3; ++i) gate.noteLate(1, 1);
    EXPECT_DOUBLE_EQ(gate.deadlineMs(), 10);
    // All three late: {10, 10, 10, 100, 100, 100}, median 55, MAD 45 -> 55 + 2 * 45.
    gate.noteLate(2, 1);
    gate.noteLate(3, 1);
    EXPECT_DOUBLE_EQ(gate.deadlineMs(), 145);
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

}  // namespace
}  // namespace phalanx::net
