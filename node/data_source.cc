#include "node/data_source.h"

#include "node/synthetic.h"

namespace phalanx::node {

TrainTest loadData(const DataConfig& data, std::uint64_t seed) {
  if (data.dataset == "synthetic") {
    const SyntheticConfig& s = data.synthetic;
    return makeSynthetic({s.train, s.test, s.features, s.classes, s.separation, seed});
  }
  return loadFashionMnist(data.path);
}

}  // namespace phalanx::node
