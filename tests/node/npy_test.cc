#include "node/npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace phalanx::node {
namespace {

using ::testing::HasSubstr;

// A file byte for byte as NumPy 1.x's np.save writes float32 [[1, 2, 3], [4, 5, 6]]:
// magic, version 1.0, u16 header length, the dict padded with spaces to a 64-byte boundary.
std::string numpyBytes(const std::string& descr, const std::string& shape, const std::string& data,
                       const std::string& fortran = "False") {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(char(header.size() & 0xff));
  out.push_back(char(header.size() >> 8));
  return out + header + data;
}

template <class T>
std::string raw(std::vector<T> v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)};
}

std::string errorOf(const std::filesystem::path& file) {
  try {
    readNpy(file);
  } catch (const NpyError& e) {
    return e.what();
  }
  return "";
}

TEST(Npy, ReadsWhatNumpyWrites) {
  testing::TempDir dir;
  const auto file = dir.write("a.npy", numpyBytes("<f4", "(2, 3)", raw<float>({1, 2, 3, 4, 5, 6})));
  const NpyArray a = readNpy(file);
  EXPECT_EQ(a.shape, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(a.rows(), 2u);
  EXPECT_EQ(a.data, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(a.row(1)[2], 6.0f);
}

TEST(Npy, NarrowsFloat64AndReadsOneDimension) {
  testing::TempDir dir;
  const NpyArray a =
      readNpy(dir.write("b.npy", numpyBytes("<f8", "(3,)", raw<double>({0.5, -1, 2}))));
  EXPECT_EQ(a.shape, (std::vector<std::size_t>{3}));
  EXPECT_EQ(a.data, (std::vector<float>{0.5f, -1.0f, 2.0f}));
}

TEST(Npy, WritesExactlyNumpysLayoutAndRoundTrips) {
  testing::TempDir dir;
  const std::vector<float> v{1, 2, 3, 4, 5, 6};
  const std::size_t shape[] = {2, 3};
  writeNpy(dir.path() / "w.npy", shape, v);
  std::ifstream in(dir.path() / "w.npy", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(bytes, numpyBytes("<f4", "(2, 3)", raw(v)));
  EXPECT_EQ(readNpy(dir.path() / "w.npy").data, v);
  const std::size_t flat[] = {6};
  writeNpy(dir.path() / "f.npy", flat, v);
  EXPECT_EQ(readNpy(dir.path() / "f.npy").shape, (std::vector<std::size_t>{6}));
  const std::size_t wrong[] = {4};
  EXPECT_THROW(writeNpy(dir.path() / "x.npy", wrong, v), NpyError);
}

TEST(Npy, RejectsWhatItCannotRead) {
  testing::TempDir dir;
  EXPECT_THAT(errorOf(dir.write("m", "hello world")), HasSubstr("not a .npy file"));
  EXPECT_THAT(errorOf(dir.write("i", numpyBytes("<i4", "(2,)", raw<int>({1, 2})))),
              HasSubstr("dtype '<i4' is not supported"));
  EXPECT_THAT(errorOf(dir.write("t", numpyBytes("<f4", "(2, 3)", raw<float>({1, 2})))),
              HasSubstr("truncated"));
  EXPECT_THAT(errorOf(dir.write("o", numpyBytes("<f4", "(2,)", raw<float>({1, 2}), "True"))),
              HasSubstr("Fortran order"));
  EXPECT_THAT(errorOf(dir.write("3", numpyBytes("<f4", "(1, 1, 2)", raw<float>({1, 2})))),
              HasSubstr("3 dimensions"));
  EXPECT_THAT(errorOf(dir.write("h", numpyBytes("<f4", "(99999999999, 99999999999)", ""))),
              HasSubstr("implausible shape"));
  std::string cut = numpyBytes("<f4", "(2,)", raw<float>({1, 2}));
  cut.resize(12);
  EXPECT_THAT(errorOf(dir.write("c", cut)), HasSubstr("header"));
  EXPECT_THAT(errorOf(dir.path() / "missing.npy"), HasSubstr("cannot open"));
}

}  // namespace
}  // namespace phalanx::node
