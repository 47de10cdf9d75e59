#include "train/idx.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <array>
#include <cmath>
#include <string>

#include "tests/support/temp_dir.h"
#include "train/dataset.h"

namespace phalanx::train {
namespace {

using ::testing::HasSubstr;

const std::filesystem::path kDir = kFashionMnistDefaultPath;

// gzip-compresses `raw` (the format the Debian package ships).
std::string gzip(const std::string& raw) {
  z_stream s{};
  EXPECT_EQ(deflateInit2(&s, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&s, uLong(raw.size())) + 64, '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  s.avail_in = uInt(raw.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&s, Z_FINISH), Z_STREAM_END);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

std::string be32(std::uint32_t v) { return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; }

std::string imageFile(std::uint32_t count, std::uint32_t rows, std::uint32_t cols,
                      std::size_t pixels_present) {
  return be32(0x803) + be32(count) + be32(rows) + be32(cols) + std::string(pixels_present, '\x7f');
}

std::string errorReading(const std::filesystem::path& file, bool images = true) {
  try {
    if (images) {
      readIdxImages(file);
    } else {
      readIdxLabels(file);
    }
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

TEST(FashionMnistFiles, RealTrainingFilesHaveTheKnownShapeCountsAndFirstImage) {
  const IdxImages images = readIdxImages(kDir / "train-images-idx3-ubyte.gz");
  ASSERT_EQ(images.count, 60000u);
  EXPECT_EQ(images.rows, 28u);
  EXPECT_EQ(images.cols, 28u);
  // The first training image (an ankle boot): its pixel sum and CRC-32, computed independently.
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < 784; ++i) sum += images.pixels[i];
  EXPECT_EQ(sum, 76247u);
  EXPECT_EQ(crc32(0, images.pixels.data(), 784), 4067475125u);

  const auto labels = readIdxLabels(kDir / "train-labels-idx1-ubyte.gz");
  ASSERT_EQ(labels.size(), 60000u);
  EXPECT_EQ(labels[0], 9);
  std::array<int, 10> counts{};
  for (auto l : labels) ++counts.at(l);
  for (int c : counts) EXPECT_EQ(c, 6000);
}

TEST(FashionMnistFiles, LoadedSetsAreStandardizedWithTrainingStatistics) {
  const TrainTest tt = loadFashionMnist(kDir);
  EXPECT_EQ(tt.train.size(), 60000u);
  EXPECT_EQ(tt.test.size(), 10000u);
  EXPECT_EQ(tt.train.features, 784u);
  std::array<int, 10> counts{};
  for (auto l : tt.test.y) ++counts.at(l);
  for (int c : counts) EXPECT_EQ(c, 1000);
  double sum = 0, sq = 0;
  for (float v : tt.train.x) {
    sum += v;
    sq += double(v) * v;
  }
  const double n = double(tt.train.x.size());
  EXPECT_NEAR(sum / n, 0.0, 1e-4);
  EXPECT_NEAR(sq / n, 1.0, 1e-3);
}

TEST(FashionMnistFiles, MissingDirectoryNamesThePathAndThePackage) {
  try {
    loadFashionMnist("/nonexistent/fmnist");
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("/nonexistent/fmnist/train-images-idx3-ubyte.gz: no such file"));
    EXPECT_THAT(e.what(), HasSubstr("dataset-fashion-mnist"));
  }
}

TEST(IdxReader, TruncatedPixelsAreReported) {
  testing::TempDir dir;
  const auto file = dir.write("t.gz", gzip(imageFile(10, 28, 28, 784 * 3)));
  EXPECT_THAT(errorReading(file), HasSubstr("truncated: the pixels needs 7840 bytes"));
}

TEST(IdxReader, TruncatedGzipStreamIsReported) {
  testing::TempDir dir;
  std::string gz = gzip(imageFile(10, 28, 28, 7840));
  gz.resize(gz.size() / 2);
  const auto file = dir.write("t.gz", gz);
  const std::string e = errorReading(file);
  EXPECT_THAT(e, HasSubstr(file.string()));
  EXPECT_TRUE(e.find("truncated") != std::string::npos || e.find("corrupt") != std::string::npos)
      << e;
}

TEST(IdxReader, CorruptCompressedBytesAreReported) {
  testing::TempDir dir;
  std::string gz = gzip(imageFile(10, 28, 28, 7840));
  for (std::size_t i = 20; i < gz.size() - 8; i += 7) gz[i] = char(gz[i] ^ 0x5a);
  const auto file = dir.write("c.gz", gz);
  EXPECT_THAT(errorReading(file), HasSubstr(file.string()));
}

TEST(IdxReader, WrongMagicAndForgedSizesAreRejectedBeforeAllocating) {
  testing::TempDir dir;
  EXPECT_THAT(errorReading(dir.write("m.gz", gzip(be32(0x801) + be32(1) + std::string(9, 'x')))),
              HasSubstr("not an IDX image file"));
  EXPECT_THAT(errorReading(dir.write("l.gz", gzip(imageFile(1, 1, 1, 1))), false),
              HasSubstr("not an IDX label file"));
  // 4 billion images of 60000x60000 pixels: refused from the header alone.
  EXPECT_THAT(errorReading(dir.write("h.gz", gzip(imageFile(0xffffffff, 60000, 60000, 0)))),
              HasSubstr("implausible IDX header"));
  EXPECT_THAT(errorReading(dir.write("z.gz", gzip(imageFile(0, 28, 28, 0)))),
              HasSubstr("implausible IDX header"));
  EXPECT_THAT(errorReading(dir.write("e.gz", "")), HasSubstr("truncated: the IDX header"));
}

TEST(IdxReader, RandomBytesNeverCrash) {
  testing::TempDir dir;
  std::uint64_t state = 12345;
  for (int trial = 0; trial < 50; ++trial) {
    std::string junk(std::size_t(trial * 37 % 500), '\0');
    for (char& c : junk) c = char((state = state * 6364136223846793005ULL + 1) >> 56);
    const auto file = dir.write("r" + std::to_string(trial), trial % 2 ? gzip(junk) : junk);
    EXPECT_FALSE(errorReading(file).empty()) << "trial " << trial;
  }
}

TEST(IdxReader, LabelCountMustMatchImageCount) {
  testing::TempDir dir;
  dir.write("train-images-idx3-ubyte.gz", gzip(imageFile(3, 2, 2, 12)));
  dir.write("train-labels-idx1-ubyte.gz", gzip(be32(0x801) + be32(2) + std::string("\1\2")));
  try {
    loadFashionMnist(dir.path());
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_THAT(e.what(), HasSubstr("holds 2 labels but"));
  }
}

}  // namespace
}  // namespace phalanx::train
