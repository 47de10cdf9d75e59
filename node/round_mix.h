// The round's robust rule over what the exchange heard (ALGORITHMS.md §2): the exchange's pivot
// first, then each neighbour heard with its Metropolis weight; the rule's output goes back to the
// exchange to apply, and whom the rule kept or excluded goes into the record and the metrics.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "node/config.h"
#include "node/exchange/round_exchange.h"
#include "node/metrics.h"
#include "node/round_record.h"
#include "robust/aggregator.h"
#include "topologies/topology.h"

namespace phalanx::node {

class RoundMix {
 public:
  RoundMix(std::unique_ptr<robust::Aggregator> rule, const topologies::Topology& topology,
           std::uint32_t self, std::size_t dim, MixingWeights scheme = MixingWeights::kMetropolis,
           std::set<std::uint32_t> byzantine = {})
      : rule_(std::move(rule)),
        topology_(topology),
        self_(self),
        dim_(dim),
        scheme_(scheme),
        byzantine_(std::move(byzantine)) {}

  // Round t's mix of `heard`, applied by `exchange`. An error (the rule failed) leaves the
  // exchange's state as the local step left it.
  std::expected<void, std::string> run(std::uint64_t t, RoundExchange& exchange,
                                       const std::vector<std::uint32_t>& heard, RoundRecord& record,
                                       NodeMetrics& metrics);

 private:
  std::unique_ptr<robust::Aggregator> rule_;
  const topologies::Topology& topology_;
  std::uint32_t self_;
  std::size_t dim_;
  MixingWeights scheme_;
  std::set<std::uint32_t> byzantine_;
};

}  // namespace phalanx::node
