#include "node/round_mix.h"

#include <algorithm>

#include "node/mix_weights.h"

namespace phalanx::node {

std::expected<void, std::string> RoundMix::run(std::uint64_t t, RoundExchange& exchange,
                                               const std::vector<std::uint32_t>& heard,
                                               RoundRecord& record, NodeMetrics& metrics) {
  const std::span<const float> pivot = exchange.pivot();
  std::vector<std::span<const float>> rows{pivot};
  std::vector<double> weights{0.0};
  for (const std::uint32_t j : heard) {
    rows.push_back(exchange.rowOf(j));
    weights.push_back(mixWeight(scheme_, topology_, self_, j, byzantine_));
  }
  const robust::MixInput in{
      .rows = rows, .byzantine_budget = topology_.budgetOf(self_), .weights = weights};
  // The rule writes where the exchange would copy its output to, when there is such a place;
  // else into scratch that lives only until the exchange has applied it: one buffer per thread,
  // not one per peer (a simulation runs thousands of peers on a few threads).
  const std::span<float> target = exchange.mixTarget();
  std::span<float> out = target;
  if (out.empty()) {
    thread_local std::vector<float> scratch;
    scratch.resize(dim_);
    out = scratch;
  }
  auto report = rule_->mix(in, out);
  if (!report) {
    if (!target.empty()) std::copy(pivot.begin(), pivot.end(), target.begin());  // as it was
    return std::unexpected(report.error());
  }
  exchange.apply(t, out, record);
  for (std::size_t k = 1; k < rows.size(); ++k) {
    const std::uint32_t j = heard[k - 1];
    record.mixed.push_back(j);
    ++metrics.peer_heard_total[j];
    metrics.peer_distance[j] = report->distance[k];
    if (!report->kept[k]) {
      record.excluded.push_back(j);
      ++metrics.peer_excluded_total[j];
    }
  }
  return {};
}

}  // namespace phalanx::node
