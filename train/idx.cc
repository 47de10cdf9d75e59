#include "train/idx.h"

#include <fmt/format.h>
#include <zlib.h>

#include <array>
#include <memory>
#include <string>

#include "train/dataset.h"

namespace phalanx::train {
namespace {

// Far above Fashion-MNIST (60000 x 28 x 28) but small enough that a forged header cannot
// make us allocate without bound.
constexpr std::uint32_t kMaxItems = 10'000'000;
constexpr std::uint32_t kMaxSide = 4096;
constexpr std::size_t kMaxBytes = std::size_t{1} << 31;

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what) {
  throw DataError(
      fmt::format("{}: {} (the file comes from the Debian package {}; "
                  "reinstall it or set data.path)",
                  file.string(), what, kFashionMnistPackage));
}

GzFile open(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) fail(file, "no such file");
  GzFile f(gzopen(file.c_str(), "rb"));
  if (!f) fail(file, "cannot open");
  return f;
}

// Reads exactly out.size() bytes or fails, telling truncation apart from corruption.
void readExactly(gzFile_s* f, const std::filesystem::path& file, std::span<std::uint8_t> out,
                 const char* what) {
  std::size_t done = 0;
  while (done < out.size()) {
    const unsigned chunk =
        static_cast<unsigned>(std::min<std::size_t>(out.size() - done, 1u << 30));
    const int n = gzread(f, out.data() + done, chunk);
    if (n < 0) {
      int code = 0;
      const char* msg = gzerror(f, &code);
      fail(file, fmt::format("corrupt gzip data while reading {}: {}", what, msg ? msg : "?"));
    }
    if (n == 0) {
      fail(file,
           fmt::format("truncated: {} needs {} bytes, file ends after {}", what, out.size(), done));
    }
    done += static_cast<std::size_t>(n);
  }
}

std::uint32_t bigEndian(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

}  // namespace

IdxImages readIdxImages(const std::filesystem::path& file) {
  GzFile f = open(file);
  std::array<std::uint8_t, 16> header{};
  readExactly(f.get(), file, header, "the IDX header");
  const std::uint32_t magic = bigEndian(&header[0]);
  if (magic != 0x00000803) {
    fail(file, fmt::format("not an IDX image file (magic {:#010x}, expected 0x00000803)", magic));
  }
  const std::uint32_t count = bigEndian(&header[4]);
  const std::uint32_t rows = bigEndian(&header[8]);
  const std::uint32_t cols = bigEndian(&header[12]);
  if (count == 0 || count > kMaxItems || rows == 0 || rows > kMaxSide || cols == 0 ||
      cols > kMaxSide || std::size_t{count} * rows * cols > kMaxBytes) {
    fail(file, fmt::format("implausible IDX header: {} images of {}x{}", count, rows, cols));
  }
  IdxImages images{count, rows, cols, {}};
  images.pixels.resize(std::size_t{count} * rows * cols);
  readExactly(f.get(), file, images.pixels, "the pixels");
  return images;
}

std::vector<std::uint8_t> readIdxLabels(const std::filesystem::path& file) {
  GzFile f = open(file);
  std::array<std::uint8_t, 8> header{};
  readExactly(f.get(), file, header, "the IDX header");
  const std::uint32_t magic = bigEndian(&header[0]);
  if (magic != 0x00000801) {
    fail(file, fmt::format("not an IDX label file (magic {:#010x}, expected 0x00000801)", magic));
  }
  const std::uint32_t count = bigEndian(&header[4]);
  if (count == 0 || count > kMaxItems) {
    fail(file, fmt::format("implausible IDX header: {} labels", count));
  }
  std::vector<std::uint8_t> labels(count);
  readExactly(f.get(), file, labels, "the labels");
  return labels;
}

}  // namespace phalanx::train
