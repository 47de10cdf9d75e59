// In-memory labelled datasets (row-major float features, u8 labels) and Fashion-MNIST loading.
// A Dataset is a plain value; const access is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/error.h"

namespace phalanx::train {

// A missing, truncated or corrupt data file; the message names the path (and the package).
class DataError : public base::ErrorOf<base::ErrorKind::kData> {
 public:
  using ErrorOf::ErrorOf;
};

struct Dataset {
  std::size_t features = 0;
  std::size_t classes = 0;
  std::vector<float> x;         // size() rows of `features` floats, row-major
  std::vector<std::uint8_t> y;  // labels in [0, classes)

  std::size_t size() const { return y.size(); }
  std::span<const float> row(std::size_t i) const { return {x.data() + i * features, features}; }
};

struct TrainTest {
  Dataset train;
  Dataset test;
};

// The Debian package that ships the files, named in every error about them.
inline constexpr const char* kFashionMnistPackage = "dataset-fashion-mnist";
inline constexpr const char* kFashionMnistDefaultPath = "/usr/share/datasets/fashion-mnist";

// Reads {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz from `dir`. Pixels are scaled to
// [0, 1] and then standardized with the training set's pixel mean and standard deviation
// (the same affine map is applied to the test set). Throws DataError.
TrainTest loadFashionMnist(const std::filesystem::path& dir);

// The rows `indices` of `data`, in that order.
Dataset subset(const Dataset& data, std::span<const std::uint32_t> indices);

}  // namespace phalanx::train
