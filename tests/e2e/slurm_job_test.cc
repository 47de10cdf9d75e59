// tools/deploy/slurm/phalanx.sbatch on a real Slurm (ctest label slurm): the test starts its own
// one-host cluster — munged with a fresh key, slurmctld and slurmd on ports of their own, all
// state in a temporary folder (SLURM_CONF points there) — submits the batch script for ten
// peers, two of them Byzantine, waits for the job and checks the run's summary.json and report.
// Skipped, saying why, without root (slurmd and munged run as root here) or Slurm.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
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

class SlurmJob : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: slurmd and munged run as root here";
    for (const char* tool : {"munged", "slurmctld", "slurmd", "sbatch", "sinfo"}) {
      if (runProcess(std::string("command -v ") + tool).exit_code != 0)
        GTEST_SKIP() << "needs " << tool << " (slurm-wlm and munge, tools/install-deps)";
    }
    const fs::path d = dir_.path();
    fs::permissions(d, fs::perms::owner_all);  // munged refuses a key others could read
    const std::string host = runProcess("hostname -s").output;
    host_ = host.substr(0, host.find_first_of("\r\n"));
    ASSERT_FALSE(host_.empty());
    fs::create_directories(d / "state");
    fs::create_directories(d / "spool");
    const auto key = runProcess("dd if=/dev/urandom of=" + (d / "munge.key").string() +
                                " bs=1024 count=1 2>&1 && chmod 400 " + (d / "munge.key").string());
    ASSERT_EQ(key.exit_code, 0) << key.output;
    const std::string dir = d.string();
    const auto munge = runProcess(
        "munged -f --key-file=" + dir + "/munge.key -S " + dir + "/munge.sock --pid-file=" + dir +
        "/munged.pid --log-file=" + dir + "/munged.log --seed-file=" + dir + "/munged.seed");
    ASSERT_EQ(munge.exit_code, 0) << munge.output << readFile(d / "munged.log");
    std::ofstream(d / "slurm.conf")
        << "ClusterName=phalanxtest\nSlurmctldHost=" << host_
        << "\nSlurmctldPort=25290\nSlurmdPort=25291\nSlurmUser=root\nSlurmdUser=root\n"
        << "AuthType=auth/munge\nAuthInfo=socket=" << dir << "/munge.sock\n"
        << "CredType=cred/munge\nStateSaveLocation=" << dir << "/state\n"
        << "SlurmdSpoolDir=" << dir << "/spool\n"
        << "SlurmctldPidFile=" << dir << "/slurmctld.pid\nSlurmdPidFile=" << dir
        << "/slurmd.pid\nSlurmctldLogFile=" << dir << "/slurmctld.log\nSlurmdLogFile=" << dir
        << "/slurmd.log\n"
        // No cgroups: the test must not depend on how the machine's cgroup tree is mounted.
        << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
        << "JobAcctGatherType=jobacct_gather/none\n"
        << "AccountingStorageType=accounting_storage/none\nSchedulerType=sched/builtin\n"
        << "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nMpiDefault=none\n"
        << "SwitchType=switch/none\nReturnToService=2\n"
        // Ten one-CPU tasks on a two-core machine: the node says it has 16.
        << "SlurmdParameters=config_overrides\n"
        << "NodeName=" << host_ << " NodeAddr=127.0.0.1 CPUs=16 RealMemory=1000 State=UNKNOWN\n"
        << "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
    env_ = "SLURM_CONF=" + dir + "/slurm.conf ";
    const auto ctld = runProcess(env_ + "slurmctld -f " + dir + "/slurm.conf 2>&1");
    ASSERT_EQ(ctld.exit_code, 0) << ctld.output << readFile(d / "slurmctld.log");
    const auto slurmd = runProcess(env_ + "slurmd -f " + dir + "/slurm.conf 2>&1");
    ASSERT_EQ(slurmd.exit_code, 0) << slurmd.output << readFile(d / "slurmd.log");
    // No wait for the node to register: `sbatch --wait` queues the job until it has.
  }

  void TearDown() override {
    if (env_.empty()) return;
    runProcess(env_ + "scancel --user=root 2>&1");
    // Each daemon gone before the folder is removed (munged writes its seed file on its way out).
    for (const char* pid_file : {"slurmd.pid", "slurmctld.pid", "munged.pid"}) {
      const int pid = std::atoi(readFile(dir_.path() / pid_file).c_str());
      if (pid > 0 && ::kill(pid, SIGTERM) == 0) waitFor([&] { return ::kill(pid, 0) != 0; }, 30s);
    }
  }

  testing::TempDir dir_;
  std::string host_, env_;
};

TEST_F(SlurmJob, TheBatchScriptRunsTenPeersTwoOfThemByzantine) {
  const fs::path run = dir_.path() / "run";
  // --wait: sbatch returns with the job's exit code. One host: ten tasks on it (the script asks
  // for two hosts of five; the command line overrides #SBATCH lines).
  const auto job =
      runProcess(env_ + "PHALANX=" + phalanxBinary() + " CONFIG=" + sourceDir() +
                 "/configs/monna-fmnist.yaml RUN=" + run.string() +
                 " BYZANTINE=8,9 PORT_BASE=25200 METRICS_BASE=25250 sbatch --wait --nodes=1 "
                 "--ntasks-per-node=10 --output=" +
                 (dir_.path() / "job.out").string() + " " + sourceDir() +
                 "/tools/deploy/slurm/phalanx.sbatch --rounds 40 2>&1");
  const std::string log = readFile(dir_.path() / "job.out");
  ASSERT_EQ(job.exit_code, 0) << job.output << log << readFile(dir_.path() / "slurmd.log");
  EXPECT_THAT(log, HasSubstr("nodes 10, edges 45"));  // topology check of the one it wrote
  // Every task found its own node id (--id auto from SLURM_PROCID) and ran every round.
  for (int id = 0; id < 10; ++id) {
    EXPECT_EQ(jsonLines(run / ("node-" + std::to_string(id) + ".jsonl")).size(), 40u) << id;
  }
  std::ifstream summary_file(run / "summary.json");
  const auto summary = nlohmann::json::parse(summary_file, nullptr, false);
  ASSERT_FALSE(summary.is_discarded()) << log;
  EXPECT_EQ(summary["rounds"].get<int>(), 40) << summary.dump();
  EXPECT_EQ(summary["byzantine"], nlohmann::json::array({8, 9})) << summary.dump();
  EXPECT_TRUE(summary["crashed"].empty()) << summary.dump();
  EXPECT_GT(summary["honest_accuracy_mean"].get<double>(), 0.3) << summary.dump();
  EXPECT_GT(summary["detection_rate"].get<double>(), 0.0) << summary.dump();
  // The report, with the config the script copied beside the logs.
  EXPECT_THAT(readFile(run / "report.html"), HasSubstr("MoNNA (Farhadkhani et al., ICML 2023)"));
}

}  // namespace
}  // namespace phalanx
