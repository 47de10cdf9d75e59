// Builds the train/test data a config's `data` section asks for (Fashion-MNIST or synthetic),
// and one node's shard of it.
#pragma once

#include <cstdint>

#include "train/dataset.h"
#include "train/train_config.h"

namespace phalanx::train {

// Throws DataError when the files are missing or corrupt.
TrainTest loadData(const DataConfig& data, std::uint64_t seed);

// Node `index`'s part (of `nodes`) of `train`, split as data.partition says with `seed`: the
// same call on every node gives disjoint shards that cover the set. Throws base::ConfigError when a
// Dirichlet split cannot give every node a sample.
Dataset shardOf(const DataConfig& data, const Dataset& train, std::size_t nodes, std::size_t index,
                std::uint64_t seed);
// Every node's shard size under the same split, by index (EF21-W's data weights).
std::vector<std::size_t> shardSizes(const DataConfig& data, const Dataset& train, std::size_t nodes,
                                    std::uint64_t seed);

}  // namespace phalanx::train
