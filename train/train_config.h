// What the training side is configured with (the `data`, `model` and `optimizer` sections of an
// experiment config, node/config.h): plain values, validated where the config is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/names.h"
#include "train/optimizer.h"

namespace phalanx::train {

enum class DatasetKind : std::uint8_t { kFashionMnist, kSynthetic };
inline constexpr auto kDatasetKinds = base::nameTable<DatasetKind>(
    {{DatasetKind::kFashionMnist, "fashion_mnist"}, {DatasetKind::kSynthetic, "synthetic"}});
enum class PartitionKind : std::uint8_t { kIid, kDirichlet };
inline constexpr auto kPartitionKinds = base::nameTable<PartitionKind>(
    {{PartitionKind::kIid, "iid"}, {PartitionKind::kDirichlet, "dirichlet"}});
enum class ModelKind : std::uint8_t { kMlp, kSoftmax };
inline constexpr auto kModelKinds =
    base::nameTable<ModelKind>({{ModelKind::kMlp, "mlp"}, {ModelKind::kSoftmax, "softmax"}});

struct SyntheticConfig {
  std::size_t train = 4000;
  std::size_t test = 1000;
  std::size_t features = 32;
  std::size_t classes = 10;
  double separation = 1.0;
};

struct DataConfig {
  DatasetKind dataset = DatasetKind::kFashionMnist;
  std::string path = "/usr/share/datasets/fashion-mnist";
  PartitionKind partition = PartitionKind::kIid;
  double alpha = 1.0;  // Dirichlet concentration
  std::size_t batch = 64;
  SyntheticConfig synthetic;
};

struct ModelConfig {
  ModelKind kind = ModelKind::kMlp;
  std::vector<std::size_t> hidden{100};  // mlp only
};

struct ScheduleConfig {
  ScheduleKind kind = ScheduleKind::kConstant;
  double tau = 50;
  std::uint64_t decay_every = 50;
  double min_lr = 0;
};

struct OptimizerConfig {
  double lr = 0.1;
  double momentum = 0.9;
  MomentumKind momentum_kind = MomentumKind::kEma;
  double weight_decay = 0;
  ScheduleConfig schedule;
};

// What a LocalTrainer is built from: the model, its optimizer, the minibatch size and the
// dataset's name (its identity), and the rounds a cosine schedule spans.
struct TrainerConfig {
  ModelConfig model;
  OptimizerConfig optimizer;
  DataConfig data;
  std::uint64_t rounds = 1;
};

}  // namespace phalanx::train
