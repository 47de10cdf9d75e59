#include "kernels/vector_ops.h"

#include <Eigen/Core>
#include <cmath>

#include "kernels/check.h"

namespace phalanx::kernels {
namespace {

using ConstVec = Eigen::Map<const Eigen::ArrayXf>;
using Vec = Eigen::Map<Eigen::ArrayXf>;

ConstVec view(std::span<const float> x) { return ConstVec(x.data(), Eigen::Index(x.size())); }
Vec view(std::span<float> x) { return Vec(x.data(), Eigen::Index(x.size())); }

}  // namespace

void axpy(float a, std::span<const float> x, std::span<float> y) {
  PHALANX_CHECK(x.size() == y.size(), "axpy: size mismatch");
  view(y) += a * view(x);
}

void axpby(float a, std::span<const float> x, float b, std::span<float> y) {
  PHALANX_CHECK(x.size() == y.size(), "axpby: size mismatch");
  view(y) = a * view(x) + b * view(y);
}

void scale(float a, std::span<float> x) { view(x) *= a; }

double dot(std::span<const float> x, std::span<const float> y) {
  PHALANX_CHECK(x.size() == y.size(), "dot: size mismatch");
  return (view(x).cast<double>() * view(y).cast<double>()).sum();
}

double squaredNorm(std::span<const float> x) { return view(x).cast<double>().square().sum(); }

double squaredDistance(std::span<const float> x, std::span<const float> y) {
  PHALANX_CHECK(x.size() == y.size(), "squaredDistance: size mismatch");
  return (view(x).cast<double>() - view(y).cast<double>()).square().sum();
}

bool allFinite(std::span<const float> x) { return view(x).isFinite().all(); }

}  // namespace phalanx::kernels
