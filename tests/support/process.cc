#include "tests/support/process.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <thread>

namespace phalanx::testing {

ProcessResult runProcess(const std::string& command_line) {
  ProcessResult result;
  const std::string full = command_line + " 2>&1";
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    result.output.append(buffer.data(), n);
  }
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string phalanxBinary() { return std::string("'") + PHALANX_BINARY + "'"; }

std::string phalanxPath() { return PHALANX_BINARY; }

std::string sourceDir() { return PHALANX_SOURCE_DIR; }

bool generateTopology(const std::filesystem::path& file, const std::string& args) {
  // In a subshell: the file gets the YAML only, not what gen warns about on stderr.
  return runProcess("(" + phalanxBinary() + " topology gen " + args + " > " + file.string() + ")")
             .exit_code == 0;
}

bool waitFor(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

}  // namespace phalanx::testing
