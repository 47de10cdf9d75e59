// launch --churn's schedule: Poisson kills among the running honest peers, restarts after the
// downtime, nobody killed when fewer than two run. Virtual time: the test says what time it is.
#include "tools/churn.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

namespace phalanx::tools {
namespace {

using namespace std::chrono_literals;

struct Event {
  double at;  // seconds since start
  std::uint32_t peer;
  bool kill;
  friend bool operator==(const Event&, const Event&) = default;
};

// Steps 100 ms at a time for `seconds` with peers 1..4 running unless down.
std::vector<Event> run(std::uint64_t seed, double seconds) {
  const auto start = Churn::Clock::time_point{} + 1h;
  Churn churn(60, 2s, seed, start);  // one kill a second on average, 2 s down
  std::vector<Event> events;
  for (int step = 0; step * 0.1 <= seconds; ++step) {
    const auto now = start + step * 100ms;
    std::vector<std::uint32_t> up;
    for (std::uint32_t p = 1; p <= 4; ++p) {
      if (!churn.down(p)) up.push_back(p);
    }
    if (const auto victim = churn.killDue(now, up)) events.push_back({step * 0.1, *victim, true});
    for (const std::uint32_t p : churn.restartsDue(now)) events.push_back({step * 0.1, p, false});
  }
  return events;
}

TEST(Churn, KillsRunningPeersAtTheRateAndRestartsThemAfterTheirDowntime) {
  const std::vector<Event> events = run(5, 120);
  std::map<std::uint32_t, double> killed_at;
  std::size_t kills = 0;
  for (const Event& e : events) {
    ASSERT_GE(e.peer, 1u);
    ASSERT_LE(e.peer, 4u);
    if (e.kill) {
      ASSERT_FALSE(killed_at.contains(e.peer)) << "killed while down";
      killed_at[e.peer] = e.at;
      ++kills;
    } else {
      ASSERT_TRUE(killed_at.contains(e.peer));
      EXPECT_NEAR(e.at - killed_at[e.peer], 2.0, 0.1 + 1e-9);  // back after its downtime
      killed_at.erase(e.peer);
    }
  }
  // About 120 draws in 120 s; fewer kills, as a draw that finds under two peers up kills nobody.
  EXPECT_GT(kills, 40u);
  EXPECT_LT(kills, 160u);
  EXPECT_EQ(run(5, 120), events);  // seeded
  EXPECT_NE(run(6, 120), events);
}

TEST(Churn, NobodyDiesWhenFewerThanTwoRunAndAnUnreapedPeerWaits) {
  const auto start = Churn::Clock::time_point{} + 1h;
  Churn churn(6000, 1s, 1, start);  // a kill due at once
  EXPECT_FALSE(churn.killDue(start + 1s, {7}).has_value());
  const auto victim = churn.killDue(start + 2s, {7, 8});
  ASSERT_TRUE(victim.has_value());
  EXPECT_TRUE(churn.down(*victim));
  EXPECT_EQ(churn.kills(), 1u);
  EXPECT_TRUE(churn.restartsDue(start + 2500ms).empty());         // still down
  EXPECT_TRUE(churn.restartsDue(start + 3s, {*victim}).empty());  // not reaped yet
  EXPECT_EQ(churn.restartsDue(start + 3100ms), std::vector<std::uint32_t>{*victim});
  EXPECT_FALSE(churn.anyDown());
}

}  // namespace
}  // namespace phalanx::tools
