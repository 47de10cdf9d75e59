// What an exchange mode uses of its peer (node/exchange/round_exchange.h): who it is, its config
// and neighbours, its learner, the round messages out, its log and its counters — never the
// round loop itself.
#pragma once

#include <spdlog/logger.h>

#include <cstdint>
#include <map>
#include <vector>

#include "net/refusal.h"
#include "node/config.h"
#include "node/exchange/round_wire.h"
#include "node/metrics.h"
#include "train/learner.h"

namespace phalanx::node {

struct ExchangeContext {
  std::uint32_t self;
  const Config& config;
  const std::vector<std::uint32_t>& neighbours;
  train::Learner& learner;
  RoundWire& wire;
  spdlog::logger& log;
  NodeMetrics& metrics;
  // Messages refused beyond what the transport and the inbox count.
  std::map<net::Refusal, std::uint64_t>& rejections;
};

}  // namespace phalanx::node
