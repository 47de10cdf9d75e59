#include "tools/supervisor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <deque>
#include <fstream>

#include "tools/command.h"

extern char** environ;

namespace phalanx::tools {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void onInterrupt(int) { g_interrupted = 1; }

// posix_spawnp with stdin from `in` ("" /dev/null) and stdout to `out` (appended or truncated;
// "" the caller's), stderr to stdout's file when `merge_stderr`. -1 when it could not start.
pid_t startChild(const std::vector<std::string>& argv, const char* in, const char* out,
                 int out_flags, bool merge_stderr) {
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  if (*out) posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, out, out_flags, 0644);
  if (merge_stderr) posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&files, STDIN_FILENO, *in ? in : "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &files, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  if (rc != 0) {
    spdlog::error("cannot start {}: {}", argv.empty() ? "" : argv[0], std::strerror(rc));
    return -1;
  }
  return pid;
}

}  // namespace

int runCommand(const std::vector<std::string>& argv, const std::filesystem::path& in,
               const std::filesystem::path& out) {
  if (argv.empty()) return -1;
  const pid_t pid = startChild(argv, in.c_str(), out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, false);
  if (pid < 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

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

std::string exitText(int wait_status) {
  if (WIFEXITED(wait_status)) return fmt::format("exit code {}", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    return fmt::format("killed by signal {} ({})", sig, strsignal(sig));
  }
  return fmt::format("wait status {}", wait_status);
}

std::vector<std::string> lastLines(const std::filesystem::path& log, std::size_t n) {
  std::ifstream in(log);
  std::deque<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    tail.push_back(std::move(line));
    if (tail.size() > n) tail.pop_front();
  }
  return {tail.begin(), tail.end()};
}

bool Supervisor::spawn(std::uint64_t key, const std::vector<std::string>& argv,
                       const std::filesystem::path& log) {
  const pid_t pid = startChild(argv, "", log.c_str(), O_WRONLY | O_CREAT | O_APPEND, true);
  if (pid < 0) return false;
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
  killAfter(grace);
}

void Supervisor::killAfter(std::chrono::milliseconds grace) {
  if (kill_at_ == Clock::time_point::max()) kill_at_ = Clock::now() + grace;
}

}  // namespace phalanx::tools
