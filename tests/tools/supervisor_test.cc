#include "tools/supervisor.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>
#include <fstream>
#include <iterator>
#include <thread>

#include "tests/support/temp_dir.h"

namespace phalanx::tools {
namespace {

using namespace std::chrono_literals;

// Reaps until every child has ended; the bound only guards against a hang.
std::map<std::uint64_t, int> reapAll(Supervisor& s) {
  std::map<std::uint64_t, int> status;
  for (int i = 0; i < 6000 && !s.empty(); ++i) {
    for (const auto& e : s.reap()) status[e.key] = e.status;
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(s.empty());
  return status;
}

TEST(Supervisor, StartsLogsReapsAndClassifies) {
  testing::TempDir dir;
  Supervisor s;
  ASSERT_TRUE(s.spawn(7, {"sh", "-c", "echo out; echo err >&2; exit 3"}, dir.path() / "7.log"));
  ASSERT_TRUE(s.spawn(8, {"sh", "-c", "exit 0"}, dir.path() / "8.log"));
  ASSERT_TRUE(s.spawn(9, {"sh", "-c", "exit 1"}, dir.path() / "9.log"));
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(s.pids().size(), 3u);
  const auto status = reapAll(s);
  ASSERT_EQ(status.size(), 3u);
  EXPECT_EQ(endingOf(status.at(7)), Ending::kDiverged);
  EXPECT_EQ(endingOf(status.at(8)), Ending::kCompleted);
  EXPECT_EQ(endingOf(status.at(9)), Ending::kFailed);
  std::ifstream log(dir.path() / "7.log");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(log), {}), "out\nerr\n");
  EXPECT_FALSE(s.spawn(1, {"/nonexistent/phalanx-binary"}, dir.path() / "1.log"));
  EXPECT_TRUE(s.empty());
}

TEST(Supervisor, StopAllTerminatesAndKillsWhatIgnoresTheTerm) {
  testing::TempDir dir;
  Supervisor s;
  ASSERT_TRUE(s.spawn(1, {"sleep", "60"}, dir.path() / "1.log"));
  // Ignores SIGTERM: only the SIGKILL after the grace ends it. The marker file says the trap
  // is in place before the stop is sent.
  const auto ready = dir.path() / "ready";
  ASSERT_TRUE(s.spawn(
      2, {"sh", "-c", "trap '' TERM; touch " + ready.string() + "; while :; do sleep 1; done"},
      dir.path() / "2.log"));
  for (int i = 0; i < 6000 && !std::filesystem::exists(ready); ++i)
    std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(s.running(2));
  s.stopAll(0ms);
  const auto status = reapAll(s);
  ASSERT_EQ(status.size(), 2u);
  EXPECT_EQ(endingOf(status.at(1)), Ending::kSignalled);
  EXPECT_TRUE(WIFSIGNALED(status.at(1)) && WTERMSIG(status.at(1)) == SIGTERM);
  EXPECT_TRUE(WIFSIGNALED(status.at(2)) && WTERMSIG(status.at(2)) == SIGKILL);
}

TEST(Supervisor, WaitOneReturnsTheChildThatEnded) {
  testing::TempDir dir;
  Supervisor s;
  ASSERT_TRUE(s.spawn(4, {"sh", "-c", "exit 2"}, dir.path() / "4.log"));
  const auto e = s.waitOne();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->key, 4u);
  EXPECT_EQ(endingOf(e->status), Ending::kBadInput);
  EXPECT_FALSE(s.waitOne());  // none left
}

}  // namespace
}  // namespace phalanx::tools
