// The compute floor of a simulation (`phalanx simulate --floor`): what its peers' local steps
// alone run at on this machine, measured in the same process right after the rounds, on the same
// number of threads, so that peer-rounds per second read as a share of it. The learners are fresh
// ones on the first honest peers' shards: the run's own peers are never touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "node/config.h"
#include "node/peer_builder.h"

namespace phalanx::node {

struct ComputeFloor {
  std::size_t learners = 0;
  std::uint64_t steps = 0;  // all learners together
  double wall_seconds = 0;
  double steps_per_second = 0;        // local steps of all threads together
  double peer_rounds_per_second = 0;  // steps_per_second over the local steps one round takes
};

// `steps_each` local steps on each of min(|shards|, 8 × threads) learners, one thread per core
// (each single-threaded, as the simulation's workers are). `shards`: peer indices whose shards
// the learners get (as giveShard deals them from `run`).
ComputeFloor measureComputeFloor(const Config& config, const RunData& run,
                                 std::span<const std::size_t> shards, unsigned threads,
                                 std::uint64_t steps_each);

// Local steps a round takes: H under exchange: outer, one otherwise.
std::uint64_t stepsPerRound(const Config& config);

}  // namespace phalanx::node
