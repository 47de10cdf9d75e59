// `phalanx bench net`: loopback throughput of the transport against a raw-socket baseline
// measured in the same run, plus small-message round-trip latency. One JSON line.
#pragma once

#include <cstddef>

namespace phalanx::tools {

struct NetBenchOptions {
  std::size_t bytes = 100u << 20;  // one message
  int repeats = 8;
  int pings = 2000;
  bool json = false;
};

// Runs the benchmark and prints the result; the exit code.
int runNetBench(const NetBenchOptions& o);

}  // namespace phalanx::tools
