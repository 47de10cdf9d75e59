// Runs a command line through /bin/sh and captures its exit code and combined output,
// for end-to-end tests that drive `phalanx` the way a user would. Thread-compatible.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>

namespace phalanx::testing {

struct ProcessResult {
  int exit_code = -1;  // -1 when the process did not exit normally (signal)
  std::string output;  // stdout and stderr, interleaved
};

ProcessResult runProcess(const std::string& command_line);

// Polls `done` every 50 ms until it holds or `limit` has passed, for what a process does that
// nothing signals (a file written, a pid gone); returns whether it held.
bool waitFor(const std::function<bool()>& done, std::chrono::milliseconds limit);

// The `phalanx` binary under test, quoted for the shell; and its path as it is (an argv[0]).
std::string phalanxBinary();
std::string phalanxPath();

// The repository root (configs/, topologies/ ...).
std::string sourceDir();

// `phalanx topology gen ARGS` written to `file`; whether it succeeded.
bool generateTopology(const std::filesystem::path& file, const std::string& args);

}  // namespace phalanx::testing
