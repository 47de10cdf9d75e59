#include "tools/supervisor.h"

#include <fcntl.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "tools/command.h"

extern char** environ;

namespace phalanx::tools {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void onInterrupt(int) { g_interrupted = 1; }

}  // namespace

void catchInterrupts() {
  struct sigaction sa {};
  sa.sa_handler = onInterrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupted() { return g_interrupted != 0; }

Ending endingOf(int wait_status) {
  if (!WIFEXITED(wait_status)) return Ending::kSignalled;
  switch (WEXITSTATUS(wait_status)) {
    case kExitOk:
      return Ending::kCompleted;
    case kExitFailure:
      return Ending::kFailed;
    case kExitBadInput:
      return Ending::kBadInput;
    case kExitDiverged:
      return Ending::kDiverged;
    default:
      return Ending::kOther;
  }
}

bool Supervisor::spawn(std::uint64_t key, const std::vector<std::string>& argv,
                       const std::filesystem::path& log) {
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&files, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &files, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  if (rc != 0) {
    spdlog::error("cannot start {}: {}", argv.empty() ? "" : argv[0], std::strerror(rc));
    return false;
  }
  running_[pid] = {key, Clock::now()};
  return true;
}

Supervisor::Exit Supervisor::ended(pid_t pid, int status) {
  const auto it = running_.find(pid);
  const Exit e{.key = it->second.key,
               .status = status,
               .seconds = std::chrono::duration<double>(Clock::now() - it->second.started).count()};
  running_.erase(it);
  return e;
}

std::vector<Supervisor::Exit> Supervisor::reap() {
  std::vector<Exit> out;
  for (auto it = running_.begin(); it != running_.end();) {
    int status = 0;
    const pid_t pid = it->first;
    ++it;  // ended() erases the child
    if (waitpid(pid, &status, WNOHANG) == pid) out.push_back(ended(pid, status));
  }
  if (!running_.empty() && Clock::now() >= kill_at_) signalAll(SIGKILL);
  return out;
}

std::optional<Supervisor::Exit> Supervisor::waitOne() {
  while (!running_.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) return std::nullopt;  // EINTR: a signal; ECHILD: none left
    if (running_.contains(pid)) return ended(pid, status);
  }
  return std::nullopt;
}

bool Supervisor::running(std::uint64_t key) const {
  for (const auto& [pid, child] : running_) {
    if (child.key == key) return true;
  }
  return false;
}

std::map<std::uint64_t, pid_t> Supervisor::pids() const {
  std::map<std::uint64_t, pid_t> out;
  for (const auto& [pid, child] : running_) out[child.key] = pid;
  return out;
}

void Supervisor::signal(std::uint64_t key, int sig) {
  for (const auto& [pid, child] : running_) {
    if (child.key == key) ::kill(pid, sig);
  }
}

void Supervisor::signalAll(int sig) {
  for (const auto& [pid, child] : running_) ::kill(pid, sig);
}

void Supervisor::stopAll(std::chrono::milliseconds grace) {
  signalAll(SIGTERM);
  if (kill_at_ == Clock::time_point::max()) kill_at_ = Clock::now() + grace;
}

}  // namespace phalanx::tools
