// The work of `phalanx monitor`: the live table of a running topology (scraping /metrics and
// /model), with a summary and a report when it stops; a finished launch's folder read back into
// both; a Prometheus scrape configuration for a topology.
#pragma once

#include <string>

namespace phalanx::tools {

struct MonitorOptions {
  std::string topology, byzantine, summary, report, from, prometheus_config, config, png, token,
      token_file, baseline;
  double every = 1.0, duration = 0;
  // The outcome as one JSON object on stdout (summary, files); the live table on stderr.
  bool json = false;
};

// Runs what `o` asks for (live, --from, --prometheus-config); the exit code.
int runMonitor(const MonitorOptions& o);

}  // namespace phalanx::tools
