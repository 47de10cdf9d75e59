// Builds the train/test data a config's `data` section asks for (Fashion-MNIST or synthetic).
#pragma once

#include <cstdint>

#include "node/config.h"
#include "node/dataset.h"

namespace phalanx::node {

// Throws DataError when the files are missing or corrupt.
TrainTest loadData(const DataConfig& data, std::uint64_t seed);

}  // namespace phalanx::node
