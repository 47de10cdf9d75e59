#include "train/synthetic.h"

#include <random>
#include <stdexcept>

namespace phalanx::train {
namespace {

Dataset draw(const SyntheticSpec& spec, const std::vector<float>& centres, std::size_t n,
             std::mt19937_64& rng) {
  Dataset d;
  d.features = spec.features;
  d.classes = spec.classes;
  d.x.resize(n * spec.features);
  d.y.resize(n);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t c = i % spec.classes;  // balanced classes
    d.y[i] = std::uint8_t(c);
    for (std::size_t j = 0; j < spec.features; ++j) {
      d.x[i * spec.features + j] = centres[c * spec.features + j] + noise(rng);
    }
  }
  return d;
}

}  // namespace

TrainTest makeSynthetic(const SyntheticSpec& spec) {
  if (spec.classes < 2 || spec.classes > 256 || spec.features == 0) {
    throw std::invalid_argument("synthetic: need 2..256 classes and at least one feature");
  }
  std::mt19937_64 rng(spec.seed);
  std::normal_distribution<float> centre(0.0f, float(spec.separation));
  std::vector<float> centres(spec.classes * spec.features);
  for (float& v : centres) v = centre(rng);
  TrainTest tt;
  tt.train = draw(spec, centres, spec.train, rng);
  tt.test = draw(spec, centres, spec.test, rng);
  return tt;
}

}  // namespace phalanx::train
