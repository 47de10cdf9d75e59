// A small, seeded, synthetic classification task for fast tests: Gaussian clusters around
// random class centres. Pure function; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "train/dataset.h"

namespace phalanx::train {

struct SyntheticSpec {
  std::size_t train = 4000;
  std::size_t test = 1000;
  std::size_t features = 32;
  std::size_t classes = 10;
  double separation = 1.0;  // class centres ~ N(0, separation^2 I); noise ~ N(0, I)
  std::uint64_t seed = 1;
};

// Train and test share the class centres; their samples are independent draws.
TrainTest makeSynthetic(const SyntheticSpec& spec);

}  // namespace phalanx::train
