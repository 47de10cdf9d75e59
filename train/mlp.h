// Fully connected ReLU network with a softmax cross-entropy head; with no hidden layer it is
// softmax regression. Every parameter lives in one caller-owned flat float vector: per layer,
// the weight (out x in, row-major, as PyTorch's nn.Linear) then the bias (out). Compressors,
// aggregators and the wire all see that one span; `layers()` tells them its shape.
// Not thread-safe: lossAndGradient reuses scratch buffers, so use one Mlp per thread.
#pragma once

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "train/dataset.h"

namespace phalanx::train {

// One tensor inside the flat parameter vector.
struct LayerShape {
  std::string name;        // "fc1.weight", "fc1.bias", ...
  std::size_t offset = 0;  // first element in the flat vector
  std::size_t rows = 0;    // weights: outputs; biases: outputs
  std::size_t cols = 0;    // weights: inputs;  biases: 1
  std::size_t size() const { return rows * cols; }
  bool isMatrix() const { return cols > 1; }
};

// An evaluation of one model. The MLP gives both numbers; a script's report may leave either
// out (a language model has no accuracy) and add metrics of its own (perplexity, ...), in the
// order it named them.
struct Evaluation {
  std::optional<double> loss;      // mean cross-entropy
  std::optional<double> accuracy;  // share of argmax == label
  std::vector<std::pair<std::string, double>> named;
};

class Mlp {
 public:
  // sizes = {inputs, hidden..., classes}; at least {inputs, classes}.
  explicit Mlp(std::vector<std::size_t> sizes);

  std::size_t dimension() const { return dimension_; }
  const std::vector<LayerShape>& layers() const { return layers_; }
  const std::vector<std::size_t>& sizes() const { return sizes_; }

  // He-uniform weights for ReLU layers, Glorot-uniform for the output layer, zero biases.
  // The same shape and seed give the same vector, drawn once per process.
  void initialize(std::span<float> params, std::uint64_t seed) const;

  // Mean cross-entropy of the batch (n rows of x, labels y) and its exact gradient, written
  // to `grad` (overwritten). Weight decay is the optimizer's business, not the loss's.
  double lossAndGradient(std::span<const float> params, std::span<const float> x,
                         std::span<const std::uint8_t> y, std::span<float> grad);

  // Loss and accuracy over a whole dataset, in chunks (parameters untouched).
  Evaluation evaluate(std::span<const float> params, const Dataset& data) const;

 private:
  void draw(std::span<float> params, std::uint64_t seed) const;  // what initialize memoizes
  using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

  // Forward pass; fills acts[l] (acts[0] unused: the input is a Map). `wide_first_layer`:
  // the first layer's product on AVX2/AVX-512 in Eigen's order (kernels/dense_product.h), where
  // it pays: evaluation's thousands of rows; a training batch's few rows gain little over Eigen.
  void forward(std::span<const float> params, std::span<const float> x, std::size_t n,
               std::vector<RowMatrix>& acts, bool wide_first_layer = false) const;

  std::vector<std::size_t> sizes_;
  std::vector<LayerShape> layers_;  // weight, bias, weight, bias, ...
  std::size_t dimension_ = 0;
  std::vector<RowMatrix> acts_;   // scratch: activations per layer
  RowMatrix delta_, delta_next_;  // scratch: back-propagated errors
};

}  // namespace phalanx::train
