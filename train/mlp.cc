#include "train/mlp.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <random>
#include <stdexcept>

#include "base/check.h"
#include "kernels/dense_product.h"

namespace phalanx::train {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix>;
using RowMap = Eigen::Map<RowMatrix>;

constexpr std::size_t kEvalChunk = 2048;

}  // namespace

Mlp::Mlp(std::vector<std::size_t> sizes) : sizes_(std::move(sizes)) {
  if (sizes_.size() < 2) throw std::invalid_argument("mlp: need at least {inputs, classes}");
  if (std::any_of(sizes_.begin(), sizes_.end(), [](std::size_t s) { return s == 0; })) {
    throw std::invalid_argument("mlp: every layer needs at least one unit");
  }
  for (std::size_t l = 0; l + 1 < sizes_.size(); ++l) {
    const std::string prefix = "fc" + std::to_string(l + 1);
    layers_.push_back({prefix + ".weight", dimension_, sizes_[l + 1], sizes_[l]});
    dimension_ += sizes_[l + 1] * sizes_[l];
    layers_.push_back({prefix + ".bias", dimension_, sizes_[l + 1], 1});
    dimension_ += sizes_[l + 1];
  }
  acts_.resize(sizes_.size());
}

void Mlp::initialize(std::span<float> params, std::uint64_t seed) const {
  PHALANX_CHECK(params.size() == dimension_, "mlp: parameter vector has the wrong size");
  // Every peer of a run starts from the config's seed, so a process that makes a thousand
  // peers (the simulation) would draw the same vector a thousand times (~1 s at 1,000 peers):
  // the last shape and seed drawn are kept and copied.
  // (The sizes fix the vector's length, checked above.)
  struct Drawn {
    std::vector<std::size_t> sizes;
    std::uint64_t seed = 0;
    std::vector<float> params;
  };
  static std::mutex mutex;
  static Drawn last;
  {
    const std::lock_guard lock(mutex);
    if (last.sizes == sizes_ && last.seed == seed) {
      std::copy(last.params.begin(), last.params.end(), params.begin());
      return;
    }
  }
  draw(params, seed);
  const std::lock_guard lock(mutex);
  last = {sizes_, seed, {params.begin(), params.end()}};
}

void Mlp::draw(std::span<float> params, std::uint64_t seed) const {
  std::mt19937_64 rng(seed);
  const std::size_t n_layers = sizes_.size() - 1;
  for (std::size_t l = 0; l < n_layers; ++l) {
    const LayerShape& w = layers_[2 * l];
    const LayerShape& b = layers_[2 * l + 1];
    const bool output = l + 1 == n_layers;
    const double bound = output ? std::sqrt(6.0 / double(w.cols + w.rows))  // Glorot
                                : std::sqrt(6.0 / double(w.cols));          // He (ReLU)
    std::uniform_real_distribution<float> u(-float(bound), float(bound));
    for (std::size_t i = 0; i < w.size(); ++i) params[w.offset + i] = u(rng);
    std::fill_n(params.begin() + std::ptrdiff_t(b.offset), b.size(), 0.0f);
  }
}

void Mlp::forward(std::span<const float> params, std::span<const float> x, std::size_t n,
                  std::vector<RowMatrix>& acts, bool wide_first_layer) const {
  const std::size_t n_layers = sizes_.size() - 1;
  for (std::size_t l = 0; l < n_layers; ++l) {
    const LayerShape& w = layers_[2 * l];
    const LayerShape& b = layers_[2 * l + 1];
    ConstRowMap weight(params.data() + w.offset, Eigen::Index(w.rows), Eigen::Index(w.cols));
    Eigen::Map<const Eigen::RowVectorXf> bias(params.data() + b.offset, Eigen::Index(b.rows));
    RowMatrix& out = acts[l + 1];
    out.resize(Eigen::Index(n), Eigen::Index(w.rows));
    if (l == 0) {
      if (!wide_first_layer ||
          !kernels::productLikeEigen(x.first(n * w.cols), params.subspan(w.offset, w.size()), n,
                                     w.cols, w.rows, {out.data(), std::size_t(out.size())})) {
        out.noalias() =
            ConstRowMap(x.data(), Eigen::Index(n), Eigen::Index(w.cols)) * weight.transpose();
      }
    } else {
      out.noalias() = acts[l] * weight.transpose();
    }
    out.rowwise() += bias;
    if (l + 1 < n_layers) out = out.cwiseMax(0.0f);  // ReLU on hidden layers
  }
}

double Mlp::lossAndGradient(std::span<const float> params, std::span<const float> x,
                            std::span<const std::uint8_t> y, std::span<float> grad) {
  const std::size_t n = y.size();
  PHALANX_CHECK(params.size() == dimension_ && grad.size() == dimension_,
                "mlp: parameter or gradient vector has the wrong size");
  PHALANX_CHECK(n > 0 && x.size() == n * sizes_.front(), "mlp: batch shape mismatch");
  forward(params, x, n, acts_);
  const std::size_t n_layers = sizes_.size() - 1;
  const std::size_t classes = sizes_.back();

  // Softmax cross-entropy: delta = (softmax(logits) - onehot(y)) / n, loss in double.
  RowMatrix& logits = acts_[n_layers];
  delta_.resize(logits.rows(), logits.cols());
  double loss = 0;
  for (std::size_t i = 0; i < n; ++i) {
    PHALANX_CHECK(y[i] < classes, "mlp: label out of range");
    const auto row = logits.row(Eigen::Index(i));
    const float top = row.maxCoeff();
    const auto shifted = (row.array() - top).eval();
    const double log_sum = std::log(double(shifted.exp().sum()));
    loss += log_sum - double(shifted(y[i]));
    delta_.row(Eigen::Index(i)) = (shifted - float(log_sum)).exp() / float(n);
    delta_(Eigen::Index(i), y[i]) -= 1.0f / float(n);
  }

  for (std::size_t l = n_layers; l-- > 0;) {
    const LayerShape& w = layers_[2 * l];
    const LayerShape& b = layers_[2 * l + 1];
    RowMap grad_w(grad.data() + w.offset, Eigen::Index(w.rows), Eigen::Index(w.cols));
    Eigen::Map<Eigen::RowVectorXf> grad_b(grad.data() + b.offset, Eigen::Index(b.rows));
    if (l == 0) {
      ConstRowMap input(x.data(), Eigen::Index(n), Eigen::Index(w.cols));
      grad_w.noalias() = delta_.transpose() * input;
    } else {
      grad_w.noalias() = delta_.transpose() * acts_[l];
    }
    grad_b = delta_.colwise().sum();
    if (l > 0) {
      ConstRowMap weight(params.data() + w.offset, Eigen::Index(w.rows), Eigen::Index(w.cols));
      delta_next_.noalias() = delta_ * weight;
      // ReLU derivative: pass where the activation was positive.
      delta_next_.array() *= (acts_[l].array() > 0.0f).cast<float>();
      std::swap(delta_, delta_next_);
    }
  }
  return loss / double(n);
}

Evaluation Mlp::evaluate(std::span<const float> params, const Dataset& data) const {
  PHALANX_CHECK(params.size() == dimension_, "mlp: parameter vector has the wrong size");
  PHALANX_CHECK(data.features == sizes_.front(), "mlp: dataset feature count mismatch");
  std::vector<RowMatrix> acts(sizes_.size());
  double loss = 0;
  std::size_t correct = 0;
  for (std::size_t start = 0; start < data.size(); start += kEvalChunk) {
    const std::size_t n = std::min(kEvalChunk, data.size() - start);
    forward(params, {data.x.data() + start * data.features, n * data.features}, n, acts,
            /*wide_first_layer=*/true);
    const RowMatrix& logits = acts.back();
    for (std::size_t i = 0; i < n; ++i) {
      const auto row = logits.row(Eigen::Index(i));
      Eigen::Index best = 0;
      const float top = row.maxCoeff(&best);
      const double log_sum = std::log(double((row.array() - top).exp().sum()));
      const std::uint8_t label = data.y[start + i];
      loss += log_sum - double(row(label) - top);
      correct += (best == Eigen::Index(label)) ? 1 : 0;
    }
  }
  const double count = double(std::max<std::size_t>(data.size(), 1));
  return {loss / count, double(correct) / count};
}

}  // namespace phalanx::train
