#include "node/npy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>
#include <sstream>
#include <string>

#include "base/bytes.h"

namespace phalanx::node {
namespace {

static_assert(std::endian::native == std::endian::little, "npy: little-endian hosts only");

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMaxHeader = 1 << 20;

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what) {
  throw NpyError(fmt::format("{}: {}", file.string(), what));
}

// The text after `'key':` in a NumPy header dict, trimmed of spaces.
std::string field(const std::string& header, const std::string& key,
                  const std::filesystem::path& file) {
  const auto at = header.find("'" + key + "'");
  if (at == std::string::npos) fail(file, fmt::format("header has no '{}'", key));
  auto start = header.find(':', at);
  if (start == std::string::npos) fail(file, "malformed header");
  ++start;
  while (start < header.size() && header[start] == ' ') ++start;
  return header.substr(start);
}

}  // namespace

namespace {

// The format from a stream of `file_size` bytes; `file` names it in errors.
NpyArray parseStream(std::istream& in, std::size_t file_size, const std::filesystem::path& file) {
  char prefix[10] = {};
  if (!in.read(prefix, 8) || std::memcmp(prefix, kMagic, 6) != 0) fail(file, "not a .npy file");
  const int major = static_cast<unsigned char>(prefix[6]);
  if (major < 1 || major > 3) fail(file, fmt::format("unsupported .npy version {}", major));
  // The header's length: 2 bytes little-endian in version 1, 4 in versions 2 and 3.
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  std::uint8_t len[4] = {};
  if (!in.read(reinterpret_cast<char*>(len), std::streamsize(len_bytes))) {
    fail(file, "truncated header");
  }
  const std::size_t header_len = base::loadLittle(std::span<const std::uint8_t>(len), len_bytes);
  if (header_len > kMaxHeader || header_len > file_size) fail(file, "implausible header length");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), std::streamsize(header_len))) fail(file, "truncated header");

  const std::string descr = field(header, "descr", file);
  const bool f4 = descr.starts_with("'<f4'");
  const bool f8 = descr.starts_with("'<f8'");
  if (!f4 && !f8) {
    fail(file, fmt::format("dtype {} is not supported; save float32 (x.astype(np.float32))",
                           descr.substr(0, descr.find(','))));
  }
  if (!field(header, "fortran_order", file).starts_with("False")) {
    fail(file, "Fortran order is not supported; save with np.ascontiguousarray");
  }
  const std::string shape_text = field(header, "shape", file);
  if (shape_text.empty() || shape_text[0] != '(') fail(file, "malformed shape");
  NpyArray out;
  std::size_t pos = 1, count = 1;
  while (pos < shape_text.size() && shape_text[pos] != ')') {
    if (shape_text[pos] == ',' || shape_text[pos] == ' ') {
      ++pos;
      continue;
    }
    std::size_t used = 0;
    unsigned long long dim = 0;
    try {
      dim = std::stoull(shape_text.substr(pos), &used);
    } catch (const std::exception&) {
      fail(file, "malformed shape");
    }
    if (dim > (std::size_t{1} << 40) || (dim > 0 && count > (std::size_t{1} << 40) / dim)) {
      fail(file, "implausible shape");
    }
    out.shape.push_back(dim);
    count *= dim;
    pos += used;
  }
  if (out.shape.empty() || out.shape.size() > 2) {
    fail(file, fmt::format("has {} dimensions; 1 or 2 are supported", out.shape.size()));
  }
  const std::size_t item = f4 ? 4 : 8;
  const std::size_t offset = (major == 1 ? 10 : 12) + header_len;
  if (file_size < offset || (file_size - offset) / item < count) {
    fail(file, fmt::format("truncated: shape needs {} values", count));
  }
  out.data.resize(count);
  if (f4) {
    in.read(reinterpret_cast<char*>(out.data.data()), std::streamsize(count * 4));
  } else {
    std::vector<double> wide(count);
    in.read(reinterpret_cast<char*>(wide.data()), std::streamsize(count * 8));
    std::copy(wide.begin(), wide.end(), out.data.begin());
  }
  if (!in) fail(file, "read error");
  return out;
}

}  // namespace

NpyArray readNpy(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, "cannot open");
  std::error_code ec;
  const auto file_size = std::filesystem::file_size(file, ec);
  return parseStream(in, ec ? 0 : std::size_t(file_size), file);
}

NpyArray parseNpy(std::string_view bytes, const std::string& name) {
  std::istringstream in{std::string(bytes)};
  return parseStream(in, bytes.size(), name);
}

std::vector<char> encodeNpy(std::span<const std::size_t> shape, std::span<const float> data) {
  std::string dims;
  for (std::size_t d : shape) dims += fmt::format("{}, ", d);
  if (shape.size() > 1) dims.resize(dims.size() - 2);  // (n,) keeps its comma; (r, c) does not
  if (shape.size() == 1) dims.pop_back();
  std::string header =
      fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}", dims);
  // Pad with spaces so the data starts on a 64-byte boundary, ending in '\n' (NumPy's layout).
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::vector<char> out(kMagic, kMagic + 6);
  out.push_back('\x01');
  out.push_back('\x00');
  std::uint8_t len[2];
  base::storeLittle(header.size(), len, 2);
  out.insert(out.end(), len, len + 2);
  out.insert(out.end(), header.begin(), header.end());
  const char* bytes = reinterpret_cast<const char*>(data.data());
  out.insert(out.end(), bytes, bytes + data.size() * sizeof(float));
  return out;
}

void writeNpy(const std::filesystem::path& file, std::span<const std::size_t> shape,
              std::span<const float> data) {
  std::size_t count = 1;
  for (std::size_t d : shape) count *= d;
  if (shape.empty() || shape.size() > 2 || count != data.size()) {
    throw NpyError(fmt::format("{}: shape ({}) does not match {} values", file.string(),
                               fmt::join(shape, ", "), data.size()));
  }
  const auto bytes = encodeNpy(shape, data);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out.write(bytes.data(), std::streamsize(bytes.size()))) fail(file, "cannot write");
}

}  // namespace phalanx::node
