#include "train/dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "train/idx.h"

namespace phalanx::train {
namespace {

constexpr std::size_t kClasses = 10;

Dataset assemble(const std::filesystem::path& images_file,
                 const std::filesystem::path& labels_file) {
  IdxImages images = readIdxImages(images_file);
  std::vector<std::uint8_t> labels = readIdxLabels(labels_file);
  if (labels.size() != images.count) {
    throw DataError(fmt::format("{}: holds {} labels but {} holds {} images (package {})",
                                labels_file.string(), labels.size(), images_file.string(),
                                images.count, kFashionMnistPackage));
  }
  const auto bad =
      std::find_if(labels.begin(), labels.end(), [](std::uint8_t l) { return l >= kClasses; });
  if (bad != labels.end()) {
    throw DataError(fmt::format("{}: label {} at index {} is outside 0..9 (package {})",
                                labels_file.string(), int{*bad}, bad - labels.begin(),
                                kFashionMnistPackage));
  }
  Dataset d;
  d.features = images.rows * images.cols;
  d.classes = kClasses;
  d.y = std::move(labels);
  d.x.resize(images.pixels.size());
  std::transform(images.pixels.begin(), images.pixels.end(), d.x.begin(),
                 [](std::uint8_t p) { return float(p) / 255.0f; });
  return d;
}

}  // namespace

TrainTest loadFashionMnist(const std::filesystem::path& dir) {
  TrainTest tt{assemble(dir / "train-images-idx3-ubyte.gz", dir / "train-labels-idx1-ubyte.gz"),
               assemble(dir / "t10k-images-idx3-ubyte.gz", dir / "t10k-labels-idx1-ubyte.gz")};
  if (tt.train.features != tt.test.features) {
    throw DataError(fmt::format("{}: training images have {} pixels but test images {}",
                                dir.string(), tt.train.features, tt.test.features));
  }
  // Standardize with the training set's statistics only, so the test set stays unseen.
  double sum = 0, sum_sq = 0;
  for (float v : tt.train.x) {
    sum += v;
    sum_sq += double(v) * v;
  }
  const double n = double(tt.train.x.size());
  const double mean = sum / n;
  const double stddev = std::sqrt(std::max(sum_sq / n - mean * mean, 1e-12));
  for (Dataset* d : {&tt.train, &tt.test}) {
    for (float& v : d->x) v = float((v - mean) / stddev);
  }
  return tt;
}

Dataset subset(const Dataset& data, std::span<const std::uint32_t> indices) {
  Dataset out;
  out.features = data.features;
  out.classes = data.classes;
  out.x.resize(indices.size() * data.features);
  out.y.resize(indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const auto src = data.row(indices[i]);
    std::copy(src.begin(), src.end(), out.x.begin() + std::ptrdiff_t(i * data.features));
    out.y[i] = data.y[indices[i]];
  }
  return out;
}

}  // namespace phalanx::train
