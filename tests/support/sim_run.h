// A `simulate` run as tests drive it (node/simulation.h): every node's round records kept in
// memory, faults written as a faults file would say them. Header-only; for tests linking node/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "node/fault_command.h"
#include "node/round_record.h"
#include "node/simulation.h"
#include "tests/support/node_fixtures.h"

namespace phalanx::testing {

// A fault at `seconds` on `node`, as a faults file line would say it.
inline node::SimulatedFault at(double seconds, std::uint32_t node, std::string_view command) {
  return {seconds, node, *node::parseFaultCommand(command)};
}

struct SimRun {
  std::vector<std::vector<node::RoundRecord>> records;
  node::SimulationResult result;
  std::vector<std::string> lines(std::uint32_t id) const {
    std::vector<std::string> out;
    for (const auto& r : records[id]) out.push_back(node::roundRecordJson(id, r));
    return out;
  }
  std::size_t mixedCount(std::uint32_t at, std::uint32_t peer, std::uint64_t from = 0) const {
    std::size_t n = 0;
    for (const auto& r : records[at]) {
      if (r.round >= from) n += std::count(r.mixed.begin(), r.mixed.end(), peer);
    }
    return n;
  }
};

inline SimRun runSim(node::Config config, std::shared_ptr<const topologies::Topology> topology,
                     std::vector<node::SimulatedFault> faults = {}, unsigned threads = 2,
                     std::filesystem::path out = {},
                     std::map<std::uint32_t, std::string> attacks = {}) {
  SimRun r;
  r.records.resize(topology->size());
  node::SimulationSetup s;
  s.config = std::move(config);
  s.topology = std::move(topology);
  s.faults = std::move(faults);
  s.threads = threads;
  s.out = std::move(out);
  for (const auto& [id, name] : attacks) s.attacks[id] = attackNamed(name);
  s.on_round = [&r](std::uint32_t id, const node::RoundRecord& rec) {
    r.records[id].push_back(rec);
  };
  r.result = node::simulate(std::move(s));
  return r;
}

}  // namespace phalanx::testing
