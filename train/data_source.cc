#include "train/data_source.h"

#include <fmt/format.h>

#include <stdexcept>

#include "train/partition.h"
#include "train/synthetic.h"

namespace phalanx::train {

TrainTest loadData(const DataConfig& data, std::uint64_t seed) {
  if (data.dataset == DatasetKind::kSynthetic) {
    const SyntheticConfig& s = data.synthetic;
    return makeSynthetic({s.train, s.test, s.features, s.classes, s.separation, seed});
  }
  return loadFashionMnist(data.path);
}

Partition partitionOf(const DataConfig& data, const Dataset& train, std::size_t nodes,
                      std::uint64_t seed) {
  Partition parts;
  if (data.partition == PartitionKind::kDirichlet) {
    try {
      parts = partitionDirichlet(train.y, train.classes, nodes, data.alpha, seed);
    } catch (const std::invalid_argument& e) {
      throw base::ConfigError(fmt::format("data.alpha: {}", e.what()));
    }
  } else {
    parts = partitionIid(train.size(), nodes, seed);
  }
  return parts;
}

Dataset shardOf(const DataConfig& data, const Dataset& train, std::size_t nodes, std::size_t index,
                std::uint64_t seed) {
  return subset(train, partitionOf(data, train, nodes, seed).at(index));
}

}  // namespace phalanx::train
