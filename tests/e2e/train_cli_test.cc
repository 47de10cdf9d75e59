// `phalanx train` and the top-level CLI, driven as a user would: real processes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace phalanx {
namespace {

using ::testing::HasSubstr;
using testing::phalanxBinary;
using testing::runProcess;

std::string lastLine(const std::string& s) {
  std::string trimmed = s;
  while (!trimmed.empty() && trimmed.back() == '\n') trimmed.pop_back();
  return trimmed.substr(trimmed.find_last_of('\n') + 1);
}

// The number after "key": in a flat JSON object.
double jsonNumber(const std::string& json, const std::string& key) {
  const std::string needle = "\"" + key + "\": ";
  const auto at = json.find(needle);
  if (at == std::string::npos) {
    ADD_FAILURE() << key << " missing in " << json;
    return -1;
  }
  return std::strtod(json.c_str() + at + needle.size(), nullptr);
}

const std::string kSynthetic =
    "seed: 2\n"
    "data: {dataset: synthetic, batch: 32, synthetic: {train: 2000, test: 500, features: 16, "
    "classes: 4}}\n"
    "model: {kind: mlp, hidden: [32]}\n"
    "rounds: {count: 200, eval_every: 100}\n";

TEST(TrainCli, HelpAndVersionExitZero) {
  auto r = runProcess(phalanxBinary() + " --help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("train"));
  r = runProcess(phalanxBinary() + " --version");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("phalanx 0."));
  r = runProcess(phalanxBinary() + " train --help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--config"));
}

TEST(TrainCli, BadCommandLineExitsTwo) {
  EXPECT_EQ(runProcess(phalanxBinary()).exit_code, 2);
  EXPECT_EQ(runProcess(phalanxBinary() + " frobnicate").exit_code, 2);
  EXPECT_EQ(runProcess(phalanxBinary() + " train").exit_code, 2);
  EXPECT_EQ(runProcess(phalanxBinary() + " train --config /nonexistent.yaml").exit_code, 2);
}

TEST(TrainCli, TrainsSyntheticAndEndsWithJson) {
  testing::TempDir dir;
  const auto config = dir.write("c.yaml", kSynthetic);
  const auto r = runProcess(phalanxBinary() + " train --json --config " + config.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("round 100/200"));
  const std::string json = lastLine(r.output);
  EXPECT_GT(jsonNumber(json, "test_accuracy"), 0.9) << json;
  EXPECT_GT(jsonNumber(json, "samples_per_second"), 0.0);
  EXPECT_GE(jsonNumber(json, "seconds"), 0.0);
  EXPECT_GT(jsonNumber(json, "train_loss"), 0.0);
  EXPECT_EQ(jsonNumber(json, "rounds"), 200);
}

TEST(TrainCli, RoundsAndSetOverrideTheConfig) {
  testing::TempDir dir;
  const auto config = dir.write("c.yaml", kSynthetic);
  const auto r = runProcess(phalanxBinary() +
                            " train --json --rounds 30 --set rounds.eval_every=10 "
                            "--set model.kind=softmax --config " +
                            config.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("round 10/30"));
  EXPECT_EQ(jsonNumber(lastLine(r.output), "rounds"), 30);
}

TEST(TrainCli, BadConfigExitsTwoNamingFileAndField) {
  testing::TempDir dir;
  const auto config = dir.write("bad.yaml", kSynthetic + "optimizer: {lr: quick}\n");
  auto r = runProcess(phalanxBinary() + " train --config " + config.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("bad.yaml: optimizer.lr: expected a number, got 'quick'"));

  r = runProcess(phalanxBinary() + " train --set mixing.rule=avg --config " +
                 dir.write("ok.yaml", kSynthetic).string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("mixing.rule: unknown value 'avg' (allowed: nna"));
}

TEST(TrainCli, MissingDatasetExitsTwoNamingPathAndPackage) {
  testing::TempDir dir;
  const auto config = dir.write("c.yaml", "data: {path: /nonexistent/fm}\n");
  const auto r = runProcess(phalanxBinary() + " train --config " + config.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("/nonexistent/fm/train-images-idx3-ubyte.gz"));
  EXPECT_THAT(r.output, HasSubstr("dataset-fashion-mnist"));
}

TEST(TrainCli, FashionMnistSoftmaxLearnsInAFewHundredSteps) {
  // The real data end to end; the full runs are in docs/GUIDE.md ("One node, no network").
  const auto r = runProcess(phalanxBinary() +
                            " train --json --rounds 300 --set rounds.eval_every=300 "
                            "--config " +
                            testing::sourceDir() + "/configs/single-softmax-fmnist.yaml");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(jsonNumber(lastLine(r.output), "test_accuracy"), 0.75) << r.output;
}

}  // namespace
}  // namespace phalanx
