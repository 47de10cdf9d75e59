#include "node/checkpoint.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <type_traits>

namespace phalanx::node {
namespace {

constexpr char kMagic[8] = {'P', 'H', 'X', 'C', 'K', 'P', 'T', '\n'};
constexpr std::uint32_t kVersion = 1;
constexpr std::string_view kPrefix = "checkpoint-";
constexpr std::string_view kSuffix = ".phx";

// Little-endian fixed-width integers, so files move between machines.
template <class T>
void put(std::vector<std::byte>& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(std::byte((v >> (8 * i)) & 0xff));
}

class Reader {
 public:
  explicit Reader(std::span<const std::byte> bytes) : bytes_(bytes) {}
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      v |= T(std::to_integer<T>(bytes_[at_ + i])) << (8 * i);
    }
    at_ += sizeof(T);
    return v;
  }
  std::span<const std::byte> take(std::size_t n, const char* what) {
    need(n, what);
    auto s = bytes_.subspan(at_, n);
    at_ += n;
    return s;
  }
  std::size_t left() const { return bytes_.size() - at_; }

 private:
  void need(std::size_t n, const char* what) const {
    if (n > left()) throw CheckpointError(fmt::format("truncated in the {}", what));
  }
  std::span<const std::byte> bytes_;
  std::size_t at_ = 0;
};

std::uint32_t crc(std::span<const std::byte> bytes) {
  uLong c = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths: feed large sections in pieces.
  for (std::size_t at = 0; at < bytes.size();) {
    const std::size_t n = std::min<std::size_t>(bytes.size() - at, 1u << 30);
    c = crc32(c, reinterpret_cast<const Bytef*>(bytes.data() + at), uInt(n));
    at += n;
  }
  return std::uint32_t(c);
}

template <class T>
void putValues(Checkpoint& c, const std::string& name, std::span<const T> values) {
  auto& s = c.sections[name];
  s.clear();
  s.reserve(values.size() * sizeof(T));
  for (T v : values) {
    if constexpr (std::is_same_v<T, float>) {
      put(s, std::bit_cast<std::uint32_t>(v));
    } else {
      put(s, v);
    }
  }
}

template <class T>
std::vector<T> getValues(const Checkpoint& c, const std::string& name) {
  const auto it = c.sections.find(name);
  if (it == c.sections.end()) {
    throw CheckpointError(fmt::format("checkpoint has no section '{}'", name));
  }
  if (it->second.size() % sizeof(T) != 0) {
    throw CheckpointError(fmt::format("section '{}' is {} bytes, not a whole number of values",
                                      name, it->second.size()));
  }
  Reader r(it->second);
  std::vector<T> out(it->second.size() / sizeof(T));
  for (auto& v : out) {
    if constexpr (std::is_same_v<T, float>) {
      v = std::bit_cast<float>(r.get<std::uint32_t>("values"));
    } else {
      v = r.get<T>("values");
    }
  }
  return out;
}

std::optional<std::uint64_t> roundOf(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return std::nullopt;
  const std::string digits =
      name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.empty() || digits.size() > 19 ||
      !std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
    return std::nullopt;
  }
  return std::stoull(digits);
}

[[noreturn]] void ioError(const std::string& what, const std::filesystem::path& p) {
  throw CheckpointError(fmt::format("{} {}: {}", what, p.string(), std::strerror(errno)));
}

void fsyncPath(const std::filesystem::path& p, int flags) {
  const int fd = ::open(p.c_str(), flags);
  if (fd < 0) ioError("cannot open", p);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) ioError("cannot sync", p);
}

}  // namespace

void Checkpoint::putFloats(const std::string& name, std::span<const float> values) {
  putValues(*this, name, values);
}
void Checkpoint::putU64s(const std::string& name, std::span<const std::uint64_t> values) {
  putValues(*this, name, values);
}
std::vector<float> Checkpoint::floats(const std::string& name) const {
  return getValues<float>(*this, name);
}
std::vector<std::uint64_t> Checkpoint::u64s(const std::string& name) const {
  return getValues<std::uint64_t>(*this, name);
}

std::vector<std::byte> serializeCheckpoint(const Checkpoint& c) {
  std::vector<std::byte> out;
  for (char ch : kMagic) out.push_back(std::byte(ch));
  put(out, kVersion);
  put(out, c.round);
  put(out, std::uint32_t(c.sections.size()));
  for (const auto& [name, bytes] : c.sections) {
    put(out, std::uint32_t(name.size()));
    for (char ch : name) out.push_back(std::byte(ch));
    put(out, std::uint64_t(bytes.size()));
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  put(out, crc(out));
  return out;
}

Checkpoint parseCheckpoint(std::span<const std::byte> bytes) {
  if (bytes.size() < sizeof(kMagic) + 4 ||
      std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    throw CheckpointError("not a phalanx checkpoint (bad magic)");
  }
  const auto body = bytes.first(bytes.size() - 4);
  Reader tail(bytes.last(4));
  if (tail.get<std::uint32_t>("checksum") != crc(body)) {
    throw CheckpointError("checksum mismatch (corrupt or truncated file)");
  }
  Reader r(body);
  r.take(sizeof(kMagic), "magic");
  if (const auto v = r.get<std::uint32_t>("version"); v != kVersion) {
    throw CheckpointError(fmt::format("format version {} (this build reads {})", v, kVersion));
  }
  Checkpoint c;
  c.round = r.get<std::uint64_t>("round");
  const auto count = r.get<std::uint32_t>("section count");
  for (std::uint32_t i = 0; i < count; ++i) {
    const auto name_len = r.get<std::uint32_t>("section name length");
    const auto name = r.take(name_len, "section name");
    const auto size = r.get<std::uint64_t>("section size");
    if (size > r.left()) throw CheckpointError("truncated in a section");
    const auto data = r.take(std::size_t(size), "section");
    std::string key(reinterpret_cast<const char*>(name.data()), name.size());
    if (!c.sections.emplace(key, std::vector<std::byte>(data.begin(), data.end())).second) {
      throw CheckpointError(fmt::format("section '{}' appears twice", key));
    }
  }
  if (r.left() != 0) throw CheckpointError("bytes after the last section");
  return c;
}

CheckpointStore::CheckpointStore(std::filesystem::path dir, std::size_t keep)
    : dir_(std::move(dir)), keep_(std::max<std::size_t>(keep, 1)) {}

std::vector<std::filesystem::path> CheckpointStore::files() const {
  std::vector<std::pair<std::uint64_t, std::filesystem::path>> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    if (auto round = roundOf(entry.path())) found.emplace_back(*round, entry.path());
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::filesystem::path> out;
  for (auto& [round, path] : found) out.push_back(std::move(path));
  return out;
}

void CheckpointStore::save(const Checkpoint& c) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw CheckpointError(fmt::format("cannot create {}: {}", dir_.string(), ec.message()));
  const auto bytes = serializeCheckpoint(c);
  const auto final_path = dir_ / fmt::format("{}{:012}{}", kPrefix, c.round, kSuffix);
  const auto tmp = dir_ / fmt::format(".{}{:012}.tmp", kPrefix, c.round);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    out.close();
    if (!out) ioError("cannot write", tmp);
  }
  fsyncPath(tmp, O_RDONLY);
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) ioError("cannot rename into", final_path);
  fsyncPath(dir_, O_RDONLY | O_DIRECTORY);  // the rename itself survives a power cut
  const auto all = files();
  for (std::size_t i = keep_; i < all.size(); ++i) std::filesystem::remove(all[i], ec);
}

CheckpointStore::Loaded CheckpointStore::loadLatest() const {
  Loaded loaded;
  for (const auto& file : files()) {
    std::ifstream in(file, std::ios::binary);
    std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in && !in.eof()) {
      loaded.skipped.push_back(fmt::format("{}: unreadable", file.string()));
      continue;
    }
    try {
      Checkpoint c = parseCheckpoint(std::as_bytes(std::span(raw)));
      if (c.round != roundOf(file)) {
        throw CheckpointError(fmt::format("holds round {}, not the one its name says", c.round));
      }
      loaded.checkpoint = std::move(c);
      loaded.file = file;
      return loaded;
    } catch (const CheckpointError& e) {
      loaded.skipped.push_back(fmt::format("{}: {}", file.string(), e.what()));
    }
  }
  return loaded;
}

}  // namespace phalanx::node
