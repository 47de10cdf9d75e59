// The work of `phalanx inject`: one fault into a running peer — through its control endpoint
// (crash, hang, slow, drop, delay, corrupt, partition, attack, heal: PeerNode::inject), or, for a
// peer `phalanx launch` started, as a signal to its process (kill, stop, cont).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace phalanx::tools {

struct InjectOptions {
  std::string topology, config, token, token_file, run;
  std::uint32_t node = 0;
  std::vector<std::string> fault;
  bool json = false;  // what was done as one JSON object, not a line for people
};

// Parses the fault, finds the token (--token, --token-file, --config, or --run's
// control.token) and delivers it; the exit code, success only when the peer confirmed it.
int runInject(const InjectOptions& o);

}  // namespace phalanx::tools
