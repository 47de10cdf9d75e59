#include "node/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace phalanx::node {
namespace {

using ::testing::HasSubstr;

// The ConfigError message for `yaml` with `sets`, or "" when it parses.
std::string errorOf(const std::string& yaml, std::vector<std::string> sets = {}) {
  try {
    parseConfig(yaml, "c.yaml", sets);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, DefaultsWhenEmpty) {
  const Config c = parseConfig("", "c.yaml");
  EXPECT_EQ(c.seed, 1u);
  EXPECT_EQ(c.data.dataset, train::DatasetKind::kFashionMnist);
  EXPECT_EQ(c.mixing.rule, robust::RuleId::kNna);
  EXPECT_EQ(c.optimizer.momentum_kind, train::MomentumKind::kEma);
  EXPECT_EQ(c.model.hidden, (std::vector<std::size_t>{100}));
  EXPECT_EQ(c.device, kernels::Device::kAuto);
  EXPECT_FALSE(c.compression.gamma) << "gamma: auto by default";
}

TEST(Config, GammaIsAutoOrAStepInZeroOne) {
  EXPECT_FALSE(parseConfig("compression: {gamma: auto}", "c.yaml").compression.gamma);
  EXPECT_EQ(parseConfig("compression: {gamma: 0.05}", "c.yaml").compression.gamma, 0.05);
  const std::vector<std::string> step{"compression.gamma=0.2"}, automatic{"compression.gamma=auto"};
  EXPECT_EQ(parseConfig("", "c.yaml", step).compression.gamma, 0.2);
  EXPECT_FALSE(parseConfig("compression: {gamma: 0.2}", "c.yaml", automatic).compression.gamma);
  EXPECT_THAT(errorOf("compression: {gamma: fast}"),
              HasSubstr("compression.gamma: expected a number, got 'fast'"));
  EXPECT_THAT(errorOf("compression: {gamma: 1.5}"), HasSubstr("compression.gamma: 1.5 is outside"));
}

TEST(Config, MixingStepIsOneAutoOrANumberInZeroTwo) {
  EXPECT_EQ(parseConfig("", "c.yaml").mixing.step, 1.0) << "the step is 1 unless asked";
  EXPECT_FALSE(parseConfig("mixing: {step: auto}", "c.yaml").mixing.step);
  EXPECT_EQ(parseConfig("mixing: {step: 1.25}", "c.yaml").mixing.step, 1.25);
  const std::vector<std::string> automatic{"mixing.step=auto"};
  EXPECT_FALSE(parseConfig("", "c.yaml", automatic).mixing.step);
  EXPECT_THAT(errorOf("mixing: {step: fast}"),
              HasSubstr("mixing.step: expected a number, got 'fast'"));
  EXPECT_THAT(errorOf("mixing: {step: 3}"), HasSubstr("mixing.step: 3 is outside"));
  EXPECT_EQ(parseConfig("", "c.yaml").mixing.weights, MixingWeights::kMetropolis);
  EXPECT_EQ(parseConfig("mixing: {weights: byzantine_max}", "c.yaml").mixing.weights,
            MixingWeights::kByzantineMax);
  EXPECT_THAT(errorOf("mixing: {weights: heavy}"), HasSubstr("mixing.weights"));
}

TEST(Config, DeviceIsAutoCpuOrCuda) {
  EXPECT_EQ(parseConfig("device: cpu", "c.yaml").device, kernels::Device::kCpu);
  EXPECT_EQ(parseConfig("device: cuda", "c.yaml").device, kernels::Device::kCuda);
  const std::string bad = errorOf("device: gpu");
  EXPECT_THAT(bad, HasSubstr("c.yaml"));
  EXPECT_THAT(bad, HasSubstr("device"));
  EXPECT_THAT(bad, HasSubstr("cuda"));
}

TEST(Config, ReadsEverySection) {
  const Config c = parseConfig(R"(
seed: 7
threads: 2
data: {dataset: synthetic, partition: dirichlet, alpha: 0.5, batch: 32,
       synthetic: {train: 100, test: 50, features: 8, classes: 3, separation: 2}}
model: {kind: mlp, hidden: [64, 32]}
optimizer: {lr: 0.5, momentum: 0.99, momentum_kind: heavy_ball, weight_decay: 0.001,
            schedule: {kind: hyperbolic, tau: 50, decay_every: 25}}
exchange: gradient
compression: {codec: topk, density: 0.001, values: fp16, feedback: ef21, gamma: 0.2,
              keyframe_every: 10, adaptive: true}
mixing: {rule: cwtm, pre: [nnm, "clip:2.0", arc, "bucketing:2"], tau: 0.1, iters: 3}
rounds: {count: 300, deadline_ms: 2000, eval_every: 50}
checkpoint: {dir: /tmp/ck, every: 10}
security: {mode: tls, ca: ca.pem, cert: n.pem, key: n.key}
byzantine: {3: {attack: alie, tau: 1.5}, 7: {attack: opt_foe, collude: true, pivots: every}}
)",
                               "c.yaml");
  EXPECT_EQ(c.seed, 7u);
  EXPECT_EQ(c.threads, 2);
  EXPECT_EQ(c.data.partition, train::PartitionKind::kDirichlet);
  EXPECT_DOUBLE_EQ(c.data.alpha, 0.5);
  EXPECT_EQ(c.data.synthetic.classes, 3u);
  EXPECT_EQ(c.model.hidden, (std::vector<std::size_t>{64, 32}));
  EXPECT_EQ(c.optimizer.schedule.kind, train::ScheduleKind::kHyperbolic);
  EXPECT_EQ(c.optimizer.schedule.decay_every, 25u);
  EXPECT_EQ(c.exchange, Exchange::kGradient);
  EXPECT_EQ(c.compression.values, compress::ValueType::kFp16);
  EXPECT_TRUE(c.compression.adaptive);
  EXPECT_EQ(c.mixing.pre.size(), 4u);
  EXPECT_EQ(c.rounds.deadline_ms, 2000u);
  EXPECT_EQ(c.security.mode, SecurityMode::kTls);
  ASSERT_EQ(c.byzantine.size(), 2u);
  EXPECT_EQ(c.byzantine.at(3).attack.name(), "alie");
  EXPECT_EQ(c.byzantine.at(3).pivots, SearchPivots::kFirst);
  EXPECT_TRUE(c.byzantine.at(7).collude);
  EXPECT_EQ(c.byzantine.at(7).pivots, SearchPivots::kEvery);
}

TEST(Config, UnknownFieldNamesFileFieldAndAllowedOnes) {
  const std::string e = errorOf("optimizer: {lrr: 0.1}");
  EXPECT_THAT(e, HasSubstr("c.yaml: optimizer.lrr: unknown field"));
  EXPECT_THAT(e, HasSubstr("lr"));
  EXPECT_THAT(e, HasSubstr("momentum_kind"));
  EXPECT_THAT(errorOf("colour: blue"), HasSubstr("c.yaml: colour: unknown field"));
}

TEST(Config, BadValuesNameTheFieldAndTheAllowedValues) {
  EXPECT_THAT(errorOf("mixing: {rule: avg}"),
              HasSubstr("c.yaml: mixing.rule: unknown value 'avg' (allowed: nna, nna_rt, mean,"));
  EXPECT_THAT(errorOf("optimizer: {lr: fast}"),
              HasSubstr("c.yaml: optimizer.lr: expected a number, got 'fast'"));
  EXPECT_THAT(errorOf("optimizer: {momentum: 1.0}"),
              HasSubstr("optimizer.momentum: 1 is outside [0, 0.999999]"));
  EXPECT_THAT(errorOf("data: {batch: -3}"), HasSubstr("data.batch: -3 is outside"));
  EXPECT_THAT(errorOf("model: {hidden: 100}"), HasSubstr("model.hidden: expected a list"));
  EXPECT_THAT(errorOf("model: {hidden: [100, x]}"), HasSubstr("model.hidden: item 1"));
  EXPECT_THAT(errorOf("data: 5"), HasSubstr("c.yaml: data: expected a section"));
  EXPECT_THAT(errorOf("compression: {adaptive: maybe}"),
              HasSubstr("compression.adaptive: expected true or false"));
}

TEST(Config, CrossFieldRules) {
  EXPECT_THAT(errorOf("security: {mode: tls, certs: x}"), HasSubstr("security.certs"));
  EXPECT_THAT(errorOf("mixing: {pre: [median]}"), HasSubstr("unknown pre-aggregator 'median'"));
  EXPECT_THAT(errorOf("mixing: {pre: [clip]}"), HasSubstr("'clip' needs a parameter"));
  EXPECT_THAT(errorOf("mixing: {pre: ['clip:-1']}"), HasSubstr("must be a number > 0"));
  EXPECT_THAT(errorOf("byzantine: {x: {attack: alie}}"),
              HasSubstr("byzantine.x: keys are node ids"));
  EXPECT_THAT(errorOf("byzantine: {2: {tau: 1}}"), HasSubstr("byzantine.2.attack: required"));
  EXPECT_THAT(errorOf("model: {kind: mlp, hidden: []}"), HasSubstr("model.hidden"));
}

TEST(Config, SyntaxErrorGivesLineAndColumn) {
  EXPECT_THAT(errorOf("data: {batch: 3\nmodel: ["), HasSubstr("c.yaml:"));
  EXPECT_THAT(errorOf("data: {batch: 3\nmodel: ["), HasSubstr("YAML syntax error"));
}

TEST(Config, SetOverridesAnyFieldAndCreatesSections) {
  const Config c = parseConfig(
      "optimizer: {lr: 0.1}\n", "c.yaml",
      std::vector<std::string>{"optimizer.lr=0.05", "model.hidden=[10, 20]",
                               "byzantine.4.attack=ipm", "optimizer.schedule.kind=cosine"});
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 0.05);
  EXPECT_EQ(c.model.hidden, (std::vector<std::size_t>{10, 20}));
  EXPECT_EQ(c.byzantine.at(4).attack.name(), "ipm");
  EXPECT_EQ(c.optimizer.schedule.kind, train::ScheduleKind::kCosine);
}

TEST(Config, SetErrorsSayTheyCameFromTheCommandLine) {
  EXPECT_THAT(errorOf("", {"optimizer.lr=abc"}),
              HasSubstr("optimizer.lr: expected a number, got 'abc' (set with --set)"));
  EXPECT_THAT(errorOf("", {"optimizer.lrr=1"}), HasSubstr("optimizer.lrr: unknown field"));
  EXPECT_THAT(errorOf("", {"nonsense"}), HasSubstr("--set nonsense: expected path=value"));
  EXPECT_THAT(errorOf("", {"a..b=1"}), HasSubstr("empty name"));
  EXPECT_THAT(errorOf("seed: 3", {"seed.x=1"}), HasSubstr("seed is a value, not a section"));
}

TEST(Config, ShippedConfigsParse) {
  for (const char* name : {"single-fmnist.yaml", "single-softmax-fmnist.yaml", "monna-fmnist.yaml",
                           "monna-fmnist-topk.yaml", "monna-fmnist-dgc.yaml"}) {
    SCOPED_TRACE(name);
    EXPECT_NO_THROW(loadConfig(testing::sourceDir() + "/configs/" + name));
  }
}

TEST(Config, ExchangeModesAcceptOnlyWhatTheyRun) {
  EXPECT_THAT(errorOf("compression: {codec: topk, feedback: ef21}"),
              HasSubstr("c.yaml: compression.feedback: model gossip tracks replicas"));
  EXPECT_THAT(errorOf("exchange: gradient\ncompression: {codec: qsgd, feedback: dgc}"),
              HasSubstr("compression.codec: dgc selects with topk_sampled"));
  EXPECT_THAT(
      errorOf(
          "exchange: gradient\ncompression: {codec: topk_sampled, feedback: dgc, adaptive: true}"),
      HasSubstr("compression.adaptive"));
  EXPECT_THAT(errorOf("exchange: gradient\ncompression: {codec: topk, feedback: diana}"),
              HasSubstr("diana needs an unbiased compressor"));
  const Config diana = parseConfig(
      "exchange: gradient\ncompression: {codec: qsgd, feedback: diana, alpha: 0.2}", "c.yaml");
  EXPECT_DOUBLE_EQ(diana.compression.alpha, 0.2);
  EXPECT_THAT(errorOf("exchange: gradient\ncompression: {codec: qsgd, feedback: diana, alpha: 2}"),
              HasSubstr("compression.alpha"));
  EXPECT_EQ(parseConfig("exchange: gradient\ncompression: {codec: topk, feedback: ef21_w, "
                        "weights: data}",
                        "c.yaml")
                .compression.weights,
            Ef21Weights::kData);
  EXPECT_THAT(errorOf("exchange: gradient\ncompression: {codec: topk, feedback: ef21_w, "
                      "weights: loss}"),
              HasSubstr("compression.weights: unknown value 'loss'"));
  // Model gossip needs a contraction: unbiased rand-k and terngrad are refused there.
  EXPECT_THAT(errorOf("compression: {codec: randk, density: 0.1}"),
              HasSubstr("compression.unbiased: rand-k with unbiased: true scales its values"));
  EXPECT_THAT(errorOf("compression: {codec: terngrad}"),
              HasSubstr("compression.codec: terngrad is unbiased"));
  EXPECT_EQ(parseConfig("compression: {codec: randk, unbiased: false}", "c.yaml").compression.codec,
            compress::CodecId::kRandk);
  // The outer loop: its section, and plain error feedback on the pseudo-gradient.
  const Config outer = parseConfig(
      "exchange: outer\nouter: {steps: 50, lr: 0.7, momentum: 0.9, nesterov: false}\n"
      "compression: {codec: topk, feedback: ef14}",
      "c.yaml");
  EXPECT_EQ(outer.exchange, Exchange::kOuter);
  EXPECT_EQ(outer.outer.steps, 50u);
  EXPECT_FALSE(outer.outer.nesterov);
  EXPECT_EQ(outer.outer.mix, OuterMix::kPseudoGradients);
  // Over models the replicas carry the model: no error feedback, as in model exchange.
  EXPECT_EQ(parseConfig("exchange: outer\nouter: {mix: models}", "c.yaml").outer.mix,
            OuterMix::kModels);
  EXPECT_THAT(errorOf("exchange: outer\nouter: {mix: models}\ncompression: {codec: topk, "
                      "feedback: ef14}"),
              HasSubstr("compression.feedback: model gossip tracks replicas"));
  EXPECT_THAT(errorOf("exchange: outer\ncompression: {codec: topk, feedback: ef21}"),
              HasSubstr("ef21: exchange: outer sends its pseudo-gradient with none or ef14"));
  EXPECT_THAT(errorOf("exchange: outer\nouter: {steps: 0}"), HasSubstr("outer.steps"));
  // The hub's broadcast: its own codec section, plain error feedback, exchange: hub only.
  const Config hub = parseConfig(
      "exchange: hub\ncompression: {codec: topk, feedback: ef14, broadcast: {codec: topk, "
      "density: 0.001, values: fp16, feedback: none}}",
      "c.yaml");
  EXPECT_EQ(hub.exchange, Exchange::kHub);
  EXPECT_EQ(hub.compression.broadcast.codec, compress::CodecId::kTopk);
  EXPECT_DOUBLE_EQ(hub.compression.broadcast.density, 0.001);
  EXPECT_EQ(hub.compression.broadcast.values, compress::ValueType::kFp16);
  EXPECT_EQ(hub.compression.broadcast.feedback, compress::FeedbackKind::kNone);
  EXPECT_EQ(parseConfig("exchange: hub", "c.yaml").compression.broadcast.feedback,
            compress::FeedbackKind::kEf14);
  EXPECT_THAT(errorOf("exchange: gradient\ncompression: {broadcast: {codec: topk}}"),
              HasSubstr("compression.broadcast.codec: only exchange: hub broadcasts"));
  EXPECT_THAT(
      errorOf("exchange: hub\ncompression: {broadcast: {codec: topk, feedback: ef21}}"),
      HasSubstr("compression.broadcast.feedback: ef21: the hub keeps plain error feedback"));
  EXPECT_THAT(errorOf("exchange: hub\ncompression: {broadcast: {codec: topk, density: 2}}"),
              HasSubstr("compression.broadcast.density"));
  const Config dgc = parseConfig(
      "exchange: gradient\ncompression: {codec: topk_sampled, feedback: dgc, "
      "warmup_every: 25, clip_norm: 2, eta: 0.2}",
      "c.yaml");
  EXPECT_EQ(dgc.compression.warmup_every, 25u);
  EXPECT_DOUBLE_EQ(dgc.compression.clip_norm, 2.0);
}

TEST(Config, DigestCoversWhatPeersMustShareOnly) {
  const Config base = parseConfig("", "c.yaml");
  const auto digest = [](const Config& c, std::string_view learner = "model=mlp:100",
                         std::size_t dimension = 79510) {
    return configDigest(c, learner, dimension);
  };
  EXPECT_EQ(digest(base).size(), 32u);
  EXPECT_EQ(digest(base),
            digest(parseConfig("", "c.yaml",
                               std::vector<std::string>{"mixing.rule=mean", "optimizer.lr=0.3",
                                                        "rounds.count=7", "model.hidden=[50]"})));
  EXPECT_NE(digest(base),
            digest(parseConfig("", "c.yaml", std::vector<std::string>{"exchange=gradient"})));
  EXPECT_NE(digest(base), digest(base, "model=mlp:50"));
  EXPECT_NE(digest(base), digest(base, "model=mlp:100", 79511));
}

TEST(Config, MissingFileIsAClearError) {
  try {
    loadConfig("/nonexistent/x.yaml");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/x.yaml: cannot read"));
  }
}

TEST(Config, TheControlTokenComesFromAFileOnlyItsOwnerReads) {
  namespace fs = std::filesystem;
  const phalanx::testing::TempDir dir;
  const fs::path file = dir.write("token", "s3cret \nsecond line\n");
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(controlToken({.token_file = file.string()}), "s3cret");
  EXPECT_EQ(controlToken({.token = "inline", .token_file = file.string()}), "inline");
  EXPECT_EQ(controlToken({}), "");
  fs::permissions(file, fs::perms::group_read, fs::perm_options::add);
  EXPECT_THROW(
      {
        try {
          controlToken({.token_file = file.string()});
        } catch (const ConfigError& e) {
          EXPECT_THAT(e.what(), HasSubstr("chmod 600"));
          throw;
        }
      },
      ConfigError);
  EXPECT_THROW(controlToken({.token_file = (dir.path() / "none").string()}), ConfigError);
  const fs::path empty = dir.write("empty", "\n");
  fs::permissions(empty, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_THROW(controlToken({.token_file = empty.string()}), ConfigError);
}

}  // namespace
}  // namespace phalanx::node
