// The child processes of a phalanx command — launch's peers, experiment's cells: started with
// their output in a log, reaped, signalled, stopped together (SIGTERM, then SIGKILL after a
// grace), their endings classified; and the interrupt flag Ctrl-C and SIGTERM raise. The one
// home for process supervision.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace phalanx::tools {

// From now on SIGINT and SIGTERM set interrupted() instead of ending this process. No
// SA_RESTART: a blocking Supervisor::waitOne() returns on the signal.
void catchInterrupts();
bool interrupted();

// Runs argv to its end with stdin from `in` and stdout to `out` (each "" for /dev/null and the
// caller's stdout); stderr stays the caller's. Returns the exit code, -1 when it could not
// start or was signalled. (A short helper command: launch's copies and remote signals.)
int runCommand(const std::vector<std::string>& argv, const std::filesystem::path& in = {},
               const std::filesystem::path& out = {});

// How a child ended, from its wait status and the exit codes of tools/command.h.
enum class Ending {
  kCompleted,  // exit 0
  kFailed,     // exit 1: ran, but did not do all it should (an honest peer did not finish)
  kBadInput,   // exit 2: refused its input before running
  kDiverged,   // exit 3: an honest model went NaN/Inf and the peer stopped on purpose
  kOther,      // any other exit code
  kSignalled,  // killed by a signal (a crash, or our SIGKILL)
};
Ending endingOf(int wait_status);
// What a person reads of it: "exit code 1", "killed by signal 9 (Killed)".
std::string exitText(int wait_status);
// The last `n` lines of a child's log (fewer when it has fewer; none when it cannot be read).
std::vector<std::string> lastLines(const std::filesystem::path& log, std::size_t n);

class Supervisor {
 public:
  using Clock = std::chrono::steady_clock;
  struct Exit {
    std::uint64_t key = 0;  // the caller's name for the child: a peer id, a cell index
    int status = 0;         // as waitpid reports it
    double seconds = 0;     // from start to end
  };

  Supervisor() = default;
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Starts argv (found through PATH) with stdout and stderr appended to `log`, stdin from
  // /dev/null. False (logged) when it cannot start.
  bool spawn(std::uint64_t key, const std::vector<std::string>& argv,
             const std::filesystem::path& log);

  // The children that ended since the last call; never blocks. Sends the SIGKILL of a
  // stopAll() whose grace has run out.
  std::vector<Exit> reap();
  // Blocks until a child ends; nullopt when a signal came first or no child is left.
  std::optional<Exit> waitOne();

  bool empty() const { return running_.empty(); }
  std::size_t size() const { return running_.size(); }
  bool running(std::uint64_t key) const;
  // The running children by key.
  std::map<std::uint64_t, pid_t> pids() const;

  void signal(std::uint64_t key, int sig);
  void signalAll(int sig);
  // SIGTERM to every running child now; those still running `grace` later get SIGKILL (from
  // reap()). A second call does not move the deadline.
  void stopAll(std::chrono::milliseconds grace);
  // Only the deadline of stopAll: for a caller that asked its children to stop some other way.
  void killAfter(std::chrono::milliseconds grace);

 private:
  struct Child {
    std::uint64_t key;
    Clock::time_point started;
  };
  Exit ended(pid_t pid, int status);

  std::map<pid_t, Child> running_;
  Clock::time_point kill_at_ = Clock::time_point::max();
};

}  // namespace phalanx::tools
