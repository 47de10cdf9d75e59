// `phalanx train`: one node, all the training data, no network — the centralized baseline.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <Eigen/Core>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "node/config.h"
#include "tools/command.h"
#include "train/data_source.h"
#include "train/local_trainer.h"

namespace phalanx::tools {
namespace {

struct TrainOptions {
  std::string config;
  std::uint64_t rounds = 0;  // 0: the config's rounds.count
  std::vector<std::string> sets;
  bool json = false;
};

int runTrain(const TrainOptions& opts) {
  using Clock = std::chrono::steady_clock;
  node::Config config;
  train::TrainTest data;
  try {
    config = node::loadConfig(opts.config, opts.sets);
    if (opts.rounds > 0) config.rounds.count = opts.rounds;
    data = train::loadData(config.data, config.seed);
  } catch (const base::Error& e) {
    spdlog::error("{}", e.what());
    return exitCodeOf(e);
  }
  train::useThreads(config.threads);
  spdlog::info("train: {} samples, {} test samples, {} features, {} classes, {} threads",
               data.train.size(), data.test.size(), data.train.features, data.train.classes,
               Eigen::nbThreads());

  train::LocalTrainer trainer(node::trainerConfig(config), std::move(data.train), config.seed);
  spdlog::info("train: model {} with {} parameters, batch {}, {} rounds",
               train::kModelKinds.name(config.model.kind), trainer.model().dimension(),
               trainer.batchSize(), config.rounds.count);

  const double samples_per_epoch = double(trainer.shard().size());
  const auto start = Clock::now();
  Clock::duration training_time{};
  double loss_sum = 0, last_train_loss = 0;
  std::uint64_t loss_count = 0;
  train::Evaluation eval;
  for (std::uint64_t t = 0; t < config.rounds.count; ++t) {
    const auto step_start = Clock::now();
    loss_sum += trainer.step(t);
    training_time += Clock::now() - step_start;
    ++loss_count;
    const bool last = t + 1 == config.rounds.count;
    if ((t + 1) % config.rounds.eval_every == 0 || last) {
      eval = trainer.evaluate(data.test);
      last_train_loss = loss_sum / double(loss_count);
      loss_sum = 0;
      loss_count = 0;
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      std::printf(
          "round %llu/%llu  epoch %.2f  lr %.5f  train_loss %.4f  test_loss %.4f  "
          "test_accuracy %.4f  %.1fs\n",
          static_cast<unsigned long long>(t + 1),
          static_cast<unsigned long long>(config.rounds.count),
          double(t + 1) * double(trainer.batchSize()) / samples_per_epoch, trainer.learningRate(t),
          last_train_loss, eval.loss.value_or(0), eval.accuracy.value_or(0), seconds);
      std::fflush(stdout);
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double train_seconds = std::chrono::duration<double>(training_time).count();
  const double samples = double(config.rounds.count) * double(trainer.batchSize());
  if (opts.json) {
    std::printf("%s\n",
                fmt::format("{{\"test_accuracy\": {:.6f}, \"test_loss\": {:.6f}, "
                            "\"train_loss\": {:.6f}, \"rounds\": {}, \"seconds\": {:.3f}, "
                            "\"samples_per_second\": {:.1f}}}",
                            eval.accuracy.value_or(0), eval.loss.value_or(0), last_train_loss,
                            config.rounds.count, seconds, samples / std::max(train_seconds, 1e-9))
                    .c_str());
  }
  return kExitOk;
}

}  // namespace

Command addTrainCommand(CLI::App& root) {
  auto opts = std::make_shared<TrainOptions>();
  CLI::App* app = root.add_subcommand(
      "train",
      "Train one node on all the training data, no network (the centralized baseline). "
      "Prints a line per evaluation; --json ends with {test_accuracy, test_loss, train_loss, "
      "rounds, seconds (wall, evaluations included), samples_per_second (training steps only)}.");
  app->add_option("--config", opts->config, "experiment config (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--rounds", opts->rounds, "number of local steps (overrides rounds.count)")
      ->check(CLI::PositiveNumber);
  app->add_option("--set", opts->sets,
                  "override a config field: path=value, e.g. optimizer.lr=0.05")
      ->allow_extra_args(false);
  app->add_flag("--json", opts->json, "end with one JSON line of results");
  return {app, [opts] { return runTrain(*opts); }};
}

}  // namespace phalanx::tools
