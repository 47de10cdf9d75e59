#include "train/mlp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace phalanx::train {
namespace {

struct Batch {
  std::vector<float> x;
  std::vector<std::uint8_t> y;
};

Batch randomBatch(std::size_t n, std::size_t features, std::size_t classes, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  Batch b{std::vector<float>(n * features), std::vector<std::uint8_t>(n)};
  for (float& v : b.x) v = g(rng);
  for (std::size_t i = 0; i < n; ++i) b.y[i] = std::uint8_t(rng() % classes);
  return b;
}

// Central finite differences on every coordinate against the analytic gradient.
void checkGradient(std::vector<std::size_t> sizes, std::uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  Mlp mlp(sizes);
  std::vector<float> params(mlp.dimension()), grad(mlp.dimension()), scratch(mlp.dimension());
  mlp.initialize(params, seed);
  // Non-zero biases so their gradients are exercised away from the symmetric start.
  std::mt19937_64 rng(seed + 1);
  std::uniform_real_distribution<float> u(-0.3f, 0.3f);
  for (const auto& layer : mlp.layers()) {
    if (!layer.isMatrix()) {
      for (std::size_t i = 0; i < layer.size(); ++i) params[layer.offset + i] = u(rng);
    }
  }
  const Batch b = randomBatch(7, sizes.front(), sizes.back(), seed + 2);
  mlp.lossAndGradient(params, b.x, b.y, grad);
  const float eps = 1e-3f;
  for (std::size_t j = 0; j < params.size(); ++j) {
    const float saved = params[j];
    params[j] = saved + eps;
    const double up = mlp.lossAndGradient(params, b.x, b.y, scratch);
    params[j] = saved - eps;
    const double down = mlp.lossAndGradient(params, b.x, b.y, scratch);
    params[j] = saved;
    const double numeric = (up - down) / (2.0 * eps);
    ASSERT_NEAR(grad[j], numeric, 2e-3 + 2e-2 * std::abs(numeric)) << "coordinate " << j;
  }
}

TEST(Mlp, LayoutIsWeightThenBiasPerLayer) {
  Mlp mlp({4, 3, 2});
  ASSERT_EQ(mlp.layers().size(), 4u);
  EXPECT_EQ(mlp.layers()[0].name, "fc1.weight");
  EXPECT_EQ(mlp.layers()[0].rows, 3u);
  EXPECT_EQ(mlp.layers()[0].cols, 4u);
  EXPECT_EQ(mlp.layers()[1].offset, 12u);
  EXPECT_EQ(mlp.layers()[2].offset, 15u);
  EXPECT_EQ(mlp.layers()[3].name, "fc2.bias");
  EXPECT_EQ(mlp.dimension(), 4u * 3 + 3 + 3 * 2 + 2);
}

TEST(Mlp, SoftmaxRegressionGradientMatchesFiniteDifferences) { checkGradient({6, 4}, 11); }

TEST(Mlp, OneHiddenLayerGradientMatchesFiniteDifferences) { checkGradient({5, 8, 3}, 12); }

TEST(Mlp, TwoHiddenLayersGradientMatchesFiniteDifferences) { checkGradient({5, 6, 4, 3}, 13); }

TEST(Mlp, LossOfZeroModelIsLogClasses) {
  Mlp mlp({3, 5});
  std::vector<float> params(mlp.dimension(), 0.0f), grad(mlp.dimension());
  const Batch b = randomBatch(4, 3, 5, 1);
  EXPECT_NEAR(mlp.lossAndGradient(params, b.x, b.y, grad), std::log(5.0), 1e-6);
}

TEST(Mlp, HandComputedSoftmaxRegressionGradient) {
  // One sample x = (1, 2), two classes, W = 0, b = 0: p = (1/2, 1/2), label 1.
  // dL/dlogits = p - onehot = (0.5, -0.5); dW = outer(dlogits, x); db = dlogits.
  Mlp mlp({2, 2});
  std::vector<float> params(mlp.dimension(), 0.0f), grad(mlp.dimension());
  const std::vector<float> x{1.0f, 2.0f};
  const std::vector<std::uint8_t> y{1};
  mlp.lossAndGradient(params, x, y, grad);
  EXPECT_EQ(grad, (std::vector<float>{0.5f, 1.0f, -0.5f, -1.0f, 0.5f, -0.5f}));
}

TEST(Mlp, InitializationIsSeededAndBounded) {
  Mlp mlp({784, 100, 10});
  std::vector<float> a(mlp.dimension()), b(mlp.dimension()), c(mlp.dimension());
  mlp.initialize(a, 5);
  mlp.initialize(b, 5);
  mlp.initialize(c, 6);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  const float he = std::sqrt(6.0f / 784.0f);
  for (std::size_t i = 0; i < 784 * 100; ++i) ASSERT_LE(std::abs(a[i]), he);
  for (std::size_t i = 78400; i < 78500; ++i) ASSERT_EQ(a[i], 0.0f);  // fc1.bias
}

TEST(Mlp, InitializationIsTheSameWhateverWasDrawnBefore) {
  // initialize keeps the last shape and seed it drew: a hit copies it, a miss draws afresh.
  Mlp big({784, 100, 10}), small({4, 3, 2});
  std::vector<float> first(big.dimension()), again(big.dimension()), other(big.dimension());
  std::vector<float> tiny(small.dimension()), tiny_again(small.dimension());
  big.initialize(first, 11);
  small.initialize(tiny, 11);  // same seed, another shape
  big.initialize(other, 12);
  big.initialize(again, 11);
  small.initialize(tiny_again, 11);
  EXPECT_EQ(again, first);
  EXPECT_EQ(tiny_again, tiny);
  EXPECT_NE(other, first);
  // The memo is a copy: changing a drawn vector leaves the next draw alone.
  first[0] += 1.0f;
  big.initialize(again, 11);
  EXPECT_NE(again[0], first[0]);
}

TEST(Mlp, EvaluateCountsArgmaxHits) {
  // Identity-like softmax regression: class = index of the larger feature.
  Mlp mlp({2, 2});
  std::vector<float> params{1, 0, 0, 1, 0, 0};
  Dataset d;
  d.features = 2;
  d.classes = 2;
  d.x = {3, 1, 0, 2, 5, 4, 1, 9};
  d.y = {0, 1, 1, 1};  // the third is wrong (argmax 0)
  const Evaluation e = mlp.evaluate(params, d);
  EXPECT_DOUBLE_EQ(e.accuracy.value(), 0.75);
  EXPECT_GT(e.loss.value(), 0.0);
}

}  // namespace
}  // namespace phalanx::train
