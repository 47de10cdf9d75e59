#include "node/compute_floor.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace phalanx::node {

std::uint64_t stepsPerRound(const Config& config) {
  return config.exchange == Exchange::kOuter ? config.outer.steps : 1;  // validated >= 1
}

ComputeFloor measureComputeFloor(const Config& config, const RunData& run,
                                 std::span<const std::size_t> shards, unsigned threads,
                                 std::uint64_t steps_each) {
  threads = std::max(threads, 1u);
  const std::size_t count = std::min<std::size_t>(shards.size(), std::size_t(threads) * 8);
  std::vector<std::shared_ptr<train::Learner>> learners;
  for (std::size_t k = 0; k < count; ++k) {
    PeerSetup setup{.config = config};
    giveShard(setup, run, shards[k]);
    learners.push_back(learnerFor(setup, AttackSpec{}));
  }
  ComputeFloor floor{.learners = count, .steps = count * steps_each};
  if (count == 0 || steps_each == 0) return floor;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < std::min<std::size_t>(threads, count); ++w) {
    workers.emplace_back([&, w] {
      omp_set_num_threads(1);
      for (std::size_t k = w; k < count; k += threads) {
        for (std::uint64_t t = 0; t < steps_each; ++t) learners[k]->step(t);
      }
    });
  }
  for (auto& worker : workers) worker.join();
  floor.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  floor.steps_per_second = floor.wall_seconds > 0 ? double(floor.steps) / floor.wall_seconds : 0;
  floor.peer_rounds_per_second = floor.steps_per_second / double(stepsPerRound(config));
  return floor;
}

}  // namespace phalanx::node
