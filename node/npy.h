// NumPy .npy files (format 1.0/2.0): float32, C order, 1-D or 2-D — the exchange format of
// the `lab` commands and of GET /model. float64 input is accepted and narrowed. Thread-safe.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace phalanx::node {

// A malformed or unsupported .npy file; the message names the path.
class NpyError : public base::ErrorOf<base::ErrorKind::kFile> {
 public:
  using ErrorOf::ErrorOf;
};

struct NpyArray {
  std::vector<std::size_t> shape;  // {n} or {rows, cols}
  std::vector<float> data;         // row-major

  std::size_t rows() const { return shape.size() == 2 ? shape[0] : 1; }
  std::size_t cols() const { return shape.empty() ? 0 : shape.back(); }
  std::span<const float> row(std::size_t i) const { return {data.data() + i * cols(), cols()}; }
};

NpyArray readNpy(const std::filesystem::path& file);
// The same from bytes in memory (an HTTP body); `name` stands for the path in errors.
NpyArray parseNpy(std::string_view bytes, const std::string& name);

// Writes `data` with `shape` (1 or 2 dimensions whose product is data.size()).
void writeNpy(const std::filesystem::path& file, std::span<const std::size_t> shape,
              std::span<const float> data);

// The same bytes in memory (for HTTP responses).
std::vector<char> encodeNpy(std::span<const std::size_t> shape, std::span<const float> data);

}  // namespace phalanx::node
