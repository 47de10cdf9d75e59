// Reader for the IDX format (LeCun's MNIST files), gzip'd or plain, via zlib.
// Every size from the header is bounded before anything is allocated. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

namespace phalanx::train {

struct IdxImages {
  std::size_t count = 0;
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<std::uint8_t> pixels;  // count * rows * cols, row-major
};

// Magic 0x00000803, u8 pixels. Throws DataError naming the file on any defect.
IdxImages readIdxImages(const std::filesystem::path& file);

// Magic 0x00000801, u8 labels. Throws DataError naming the file on any defect.
std::vector<std::uint8_t> readIdxLabels(const std::filesystem::path& file);

}  // namespace phalanx::train
