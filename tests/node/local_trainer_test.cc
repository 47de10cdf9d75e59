#include "node/local_trainer.h"

#include <gtest/gtest.h>

#include <vector>

#include "kernels/vector_ops.h"
#include "node/data_source.h"
#include "node/partition.h"

namespace phalanx::node {
namespace {

Config syntheticConfig() {
  return parseConfig(R"(
seed: 3
data: {dataset: synthetic, batch: 32, synthetic: {train: 2000, test: 500, features: 16, classes: 4}}
model: {kind: mlp, hidden: [32]}
optimizer: {lr: 0.1, momentum: 0.9}
rounds: {count: 300}
)",
                     "test");
}

TEST(LocalTrainer, LearnsTheSyntheticTask) {
  const Config config = syntheticConfig();
  TrainTest data = loadData(config.data, config.seed);
  LocalTrainer trainer(config, data.train, config.seed);
  const Evaluation before = trainer.evaluate(data.test);
  double first = 0, last = 0;
  for (std::uint64_t t = 0; t < config.rounds.count; ++t) {
    const double loss = trainer.step(t);
    if (t < 10) first += loss / 10;
    if (t >= config.rounds.count - 10) last += loss / 10;
  }
  const Evaluation after = trainer.evaluate(data.test);
  EXPECT_LT(last, first * 0.5);
  EXPECT_GT(after.accuracy, 0.9);
  EXPECT_GT(after.accuracy, before.accuracy + 0.3);
}

TEST(LocalTrainer, SameSeedGivesTheSameParameters) {
  const Config config = syntheticConfig();
  const TrainTest data = loadData(config.data, config.seed);
  LocalTrainer a(config, data.train, 9), b(config, data.train, 9), c(config, data.train, 10);
  for (std::uint64_t t = 0; t < 20; ++t) {
    a.step(t);
    b.step(t);
    c.step(t);
  }
  EXPECT_TRUE(std::equal(a.parameters().begin(), a.parameters().end(), b.parameters().begin()));
  EXPECT_GT(kernels::squaredDistance(a.parameters(), c.parameters()), 0.0);
}

TEST(LocalTrainer, WeightDecayShrinksParametersWithoutData) {
  // lr = 0 apart from decay is not possible, so compare decayed against undecayed runs.
  Config config = syntheticConfig();
  const TrainTest data = loadData(config.data, config.seed);
  LocalTrainer plain(config, data.train, 1);
  config.optimizer.weight_decay = 0.5;
  LocalTrainer decayed(config, data.train, 1);
  for (std::uint64_t t = 0; t < 50; ++t) {
    plain.step(t);
    decayed.step(t);
  }
  EXPECT_LT(kernels::squaredNorm(decayed.parameters()), kernels::squaredNorm(plain.parameters()));
}

TEST(LocalTrainer, ShardFromAPartitionTrains) {
  const Config config = syntheticConfig();
  const TrainTest data = loadData(config.data, config.seed);
  const Partition parts = partitionDirichlet(data.train.y, data.train.classes, 4, 1.0, 1);
  LocalTrainer trainer(config, subset(data.train, parts[0]), 1);
  EXPECT_EQ(trainer.shard().size(), parts[0].size());
  for (std::uint64_t t = 0; t < 10; ++t) trainer.step(t);
  EXPECT_TRUE(kernels::allFinite(trainer.parameters()));
}

TEST(LocalTrainer, EmptyShardIsAnError) {
  const Config config = syntheticConfig();
  Dataset empty;
  empty.features = 16;
  empty.classes = 4;
  EXPECT_THROW(LocalTrainer(config, empty, 1), ConfigError);
}

}  // namespace
}  // namespace phalanx::node
