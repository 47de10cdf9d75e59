// Builds the train/test data a config's `data` section asks for (Fashion-MNIST or synthetic),
// and one node's shard of it.
#pragma once

#include <cstdint>

#include "train/dataset.h"
#include "train/partition.h"
#include "train/train_config.h"

namespace phalanx::train {

// Throws DataError when the files are missing or corrupt.
TrainTest loadData(const DataConfig& data, std::uint64_t seed);

// Every node's part (of `nodes`) of `train`, split as data.partition says with `seed`: the
// same call on every node gives disjoint shards that cover the set. Throws base::ConfigError when a
// Dirichlet split cannot give every node a sample. A process that deals shards to many peers
// (the simulation) splits once: the split costs as much as every shard together.
Partition partitionOf(const DataConfig& data, const Dataset& train, std::size_t nodes,
                      std::uint64_t seed);
// Node `index`'s part of that split.
Dataset shardOf(const DataConfig& data, const Dataset& train, std::size_t nodes, std::size_t index,
                std::uint64_t seed);

}  // namespace phalanx::train
