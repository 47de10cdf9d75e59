// `phalanx launch` over real ssh (ctest label ssh): an sshd of the test's own — its own port,
// generated host and user keys — answers on 127.0.0.2 and 127.0.0.3, loopback addresses this
// machine does not list as its own, so launch reaches the peers placed there through ssh as it
// would other hosts. Their run folder is a different one (--remote-out): topology and config are
// copied there and results copied back. Checked: remote start, the monitor scraping remote
// peers, results back in --out, `inject --run` killing a remote peer, and Ctrl-C stopping every
// remote peer. Each test has its own sshd port. Skipped, saying why, without root (sshd's
// privilege separation) or sshd.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tests/support/json_files.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace phalanx {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing::jsonLines;
using testing::phalanxBinary;
using testing::readFile;
using testing::runProcess;
using testing::sourceDir;
using testing::waitFor;
namespace fs = std::filesystem;

class SshLaunch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: sshd's privilege separation";
    if (!fs::exists("/usr/sbin/sshd") || runProcess("command -v ssh-keygen").exit_code != 0)
      GTEST_SKIP() << "needs openssh-server and openssh-client (tools/install-deps)";
    const fs::path d = dir_.path();
    ASSERT_EQ(runProcess("ssh-keygen -q -t ed25519 -N '' -f " + (d / "host_key").string() +
                         " && ssh-keygen -q -t ed25519 -N '' -f " + (d / "user_key").string() +
                         " && cp " + (d / "user_key.pub").string() + " " +
                         (d / "authorized_keys").string())
                  .exit_code,
              0);
  }

  // The sshd for one test, on a port of that test's own: ctest runs the tests side by side.
  void startSshd(int port) {
    const fs::path d = dir_.path();
    std::ofstream(d / "sshd_config")
        << "Port " << port << "\nListenAddress 127.0.0.2\nListenAddress 127.0.0.3\n"
        << "HostKey " << (d / "host_key").string() << "\n"
        << "AuthorizedKeysFile " << (d / "authorized_keys").string() << "\nPidFile "
        << (d / "sshd.pid").string() << "\n"
        << "PermitRootLogin prohibit-password\n"
           "PasswordAuthentication no\n"
           "KbdInteractiveAuthentication no\n"
           "UsePAM no\nStrictModes no\nLogLevel ERROR\n";
    const auto started =
        runProcess("mkdir -p /run/sshd && /usr/sbin/sshd -f " + (d / "sshd_config").string() +
                   " -E " + (d / "sshd.log").string());
    ASSERT_EQ(started.exit_code, 0) << started.output << readFile(d / "sshd.log");
    ssh_ = "ssh -p " + std::to_string(port) + " -i " + (d / "user_key").string() +
           " -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes "
           "-o LogLevel=ERROR";
    ASSERT_TRUE(waitFor([&] { return runProcess(ssh_ + " 127.0.0.3 true").exit_code == 0; }, 30s))
        << readFile(d / "sshd.log");
  }

  void TearDown() override {
    const int pid = std::atoi(readFile(dir_.path() / "sshd.pid").c_str());
    if (pid > 0 && ::kill(pid, SIGTERM) == 0) waitFor([&] { return ::kill(pid, 0) != 0; }, 30s);
  }

  // Six peers: 0 and 1 here, 2 and 3 on "host" 127.0.0.2, 4 and 5 on 127.0.0.3.
  fs::path topology(int base_port) {
    const fs::path file = dir_.path() / ("t" + std::to_string(base_port) + ".yaml");
    std::ofstream out(file);
    out << "byzantine_budget: 1\nnodes:\n";
    for (int id = 0; id < 6; ++id) {
      out << "  - {id: " << id << ", host: \"127.0.0."
          << (id < 2   ? 1
              : id < 4 ? 2
                       : 3)
          << "\", port: " << base_port + id << ", metrics_port: " << base_port + 50 + id << "}\n";
    }
    out << "generator: {kind: complete}\n";
    return file;
  }

  std::string launch(const fs::path& topology, const fs::path& out, const fs::path& remote,
                     const std::string& extra) {
    return phalanxBinary() + " launch --topology " + topology.string() + " --config " +
           sourceDir() + "/configs/monna-fmnist.yaml --out " + out.string() + " --remote-out " +
           remote.string() + " --ssh '" + ssh_ + "' " + extra;
  }

  testing::TempDir dir_;
  std::string ssh_;
};

TEST_F(SshLaunch, PeersOnOtherHostsTrainTheirResultsComeBackAndInjectKillsOne) {
  ASSERT_NO_FATAL_FAILURE(startSshd(25199));
  const fs::path t = topology(25100), out = dir_.path() / "run", remote = dir_.path() / "far";
  auto run = std::async(std::launch::async, [&] {
    return runProcess(launch(t, out, remote, "--rounds 400 --byzantine 5 --attack alie"));
  });
  ASSERT_TRUE(waitFor([&] { return jsonLines(remote / "node-5.jsonl").size() >= 5; }, 180s))
      << (run.wait_for(1s) == std::future_status::ready ? run.get().output : "still running");
  // An operator's monitor reaches every peer, the remote ones included.
  const auto watch = runProcess(phalanxBinary() + " monitor --topology " + t.string() +
                                " --byzantine 5 --every 0.3 --duration 1");
  EXPECT_THAT(watch.output, HasSubstr("dead or unreachable peers         none")) << watch.output;
  // The Byzantine peer on 127.0.0.3 is killed through ssh while it attacks.
  const auto kill = runProcess(phalanxBinary() + " inject --topology " + t.string() + " --run " +
                               out.string() + " --node 5 kill");
  EXPECT_EQ(kill.exit_code, 0) << kill.output;
  EXPECT_THAT(kill.output, HasSubstr("node 5: kill (on 127.0.0.3"));
  ASSERT_EQ(run.wait_for(300s), std::future_status::ready) << "launch still running";
  const auto result = run.get();
  ASSERT_EQ(result.exit_code, 0) << result.output;

  // The remote peers ran in their own folder, from the copies launch put there ...
  EXPECT_TRUE(fs::exists(remote / "topology.yaml"));
  EXPECT_TRUE(fs::exists(remote / "config.yaml"));
  EXPECT_FALSE(fs::exists(out / "node-0.pid"));
  for (const int id : {2, 3, 4}) {
    // ... and their results came back to --out, where the summary read them.
    EXPECT_EQ(jsonLines(out / ("node-" + std::to_string(id) + ".jsonl")).size(), 400u) << id;
    EXPECT_EQ(readFile(out / ("node-" + std::to_string(id) + ".jsonl")),
              readFile(remote / ("node-" + std::to_string(id) + ".jsonl")));
    EXPECT_TRUE(fs::exists(out / ("node-" + std::to_string(id) + ".npy"))) << id;
    EXPECT_THAT(readFile(out / ("node-" + std::to_string(id) + ".log")), HasSubstr("round"));
  }
  EXPECT_LT(jsonLines(out / "node-5.jsonl").size(), 400u);
  std::ifstream summary_file(out / "summary.json");
  const auto summary = nlohmann::json::parse(summary_file, nullptr, false);
  ASSERT_FALSE(summary.is_discarded());
  EXPECT_EQ(summary["rounds"].get<int>(), 400) << summary.dump();
  EXPECT_EQ(summary["crashed"], nlohmann::json::array({5})) << summary.dump();
  EXPECT_GT(summary["honest_accuracy_mean"].get<double>(), 0.6) << summary.dump();
  // The final models (three of them copied back) give the consensus distance.
  const auto samples = jsonLines(out / "monitor.jsonl");
  ASSERT_FALSE(samples.empty());
  EXPECT_TRUE(samples.back()["consensus_distance"].is_number()) << samples.back().dump();
  EXPECT_TRUE(fs::exists(out / "report.html"));
}

TEST_F(SshLaunch, CtrlCStopsEveryRemotePeer) {
  ASSERT_NO_FATAL_FAILURE(startSshd(25198));
  const fs::path t = topology(25120), out = dir_.path() / "run", remote = dir_.path() / "far";
  const auto started = runProcess(launch(t, out, remote, "--rounds 100000") + " > " +
                                  (dir_.path() / "launch.log").string() + " 2>&1 & echo $!");
  const int pid = std::atoi(started.output.c_str());
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(waitFor([&] { return jsonLines(remote / "node-4.jsonl").size() >= 5; }, 180s))
      << readFile(dir_.path() / "launch.log");
  ::kill(pid, SIGINT);
  ASSERT_TRUE(waitFor([&] { return ::kill(pid, 0) != 0; }, 60s))
      << "launch still running 60 s after Ctrl-C";
  for (const int id : {2, 3, 4, 5}) {
    // The SIGTERM went through ssh; the peer left with a Goodbye; its log came back.
    const int remote_pid =
        std::atoi(readFile(remote / ("node-" + std::to_string(id) + ".pid")).c_str());
    ASSERT_GT(remote_pid, 0) << id;
    EXPECT_TRUE(waitFor([&] { return ::kill(remote_pid, 0) != 0; }, 30s))
        << "remote peer " << id << " outlived launch";
    EXPECT_THAT(readFile(out / ("node-" + std::to_string(id) + ".log")),
                HasSubstr("signal 15: leaving"))
        << id;
  }
  EXPECT_TRUE(fs::exists(out / "summary.json"));
}

}  // namespace
}  // namespace phalanx
