#include "train/checkpoint.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "base/bytes.h"

namespace phalanx::train {
namespace {

constexpr char kMagic[8] = {'P', 'H', 'X', 'C', 'K', 'P', 'T', '\n'};
constexpr std::uint32_t kVersion = 1;
constexpr std::string_view kPrefix = "checkpoint-";
constexpr std::string_view kSuffix = ".phx";

using base::ByteReader;
using base::ByteWriter;

[[noreturn]] void truncated(const char* what) {
  throw CheckpointError(fmt::format("truncated in the {}", what));
}

// Checks a ByteReader call's result, naming the part that was cut short.
void need(bool ok, const char* what) {
  if (!ok) truncated(what);
}

std::span<const std::uint8_t> take(ByteReader& r, std::uint64_t n, const char* what) {
  if (n > r.remaining()) truncated(what);  // before narrowing n to size_t
  return r.take(std::size_t(n)).value();
}

std::uint32_t crc(std::span<const std::uint8_t> bytes) {
  uLong c = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths: feed large sections in pieces.
  for (std::size_t at = 0; at < bytes.size();) {
    const std::size_t n = std::min<std::size_t>(bytes.size() - at, 1u << 30);
    c = crc32(c, bytes.data() + at, uInt(n));
    at += n;
  }
  return std::uint32_t(c);
}

// A reader over section `name`, checked to hold whole values of `width` bytes.
ByteReader sectionReader(const Checkpoint& c, const std::string& name, std::size_t width,
                         std::size_t& count) {
  const auto it = c.sections.find(name);
  if (it == c.sections.end()) {
    throw CheckpointError(fmt::format("checkpoint has no section '{}'", name));
  }
  if (it->second.size() % width != 0) {
    throw CheckpointError(fmt::format("section '{}' is {} bytes, not a whole number of values",
                                      name, it->second.size()));
  }
  count = it->second.size() / width;
  return ByteReader(it->second);
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
  auto& bytes = sections[name];
  bytes.clear();
  ByteWriter w(bytes);
  for (float v : values) w.f32(v);
}

void Checkpoint::putU64s(const std::string& name, std::span<const std::uint64_t> values) {
  auto& bytes = sections[name];
  bytes.clear();
  ByteWriter w(bytes);
  for (std::uint64_t v : values) w.u64(v);
}

std::vector<float> Checkpoint::floats(const std::string& name) const {
  std::size_t count = 0;
  ByteReader r = sectionReader(*this, name, sizeof(float), count);
  std::vector<float> out(count);
  for (float& v : out) r.f32(v);  // cannot fail: the size was checked
  return out;
}

std::vector<std::uint64_t> Checkpoint::u64s(const std::string& name) const {
  std::size_t count = 0;
  ByteReader r = sectionReader(*this, name, sizeof(std::uint64_t), count);
  std::vector<std::uint64_t> out(count);
  for (std::uint64_t& v : out) r.u64(v);
  return out;
}

std::vector<std::uint8_t> serializeCheckpoint(const Checkpoint& c) {
  std::vector<std::uint8_t> out(std::begin(kMagic), std::end(kMagic));
  ByteWriter w(out);
  w.u32(kVersion);
  w.u64(c.round);
  w.u32(std::uint32_t(c.sections.size()));
  for (const auto& [name, bytes] : c.sections) {
    w.u32(std::uint32_t(name.size()));
    out.insert(out.end(), name.begin(), name.end());
    w.u64(bytes.size());
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  w.u32(crc(out));
  return out;
}

Checkpoint parseCheckpoint(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < sizeof(kMagic) + 4 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    throw CheckpointError("not a phalanx checkpoint (bad magic)");
  }
  const auto body = bytes.first(bytes.size() - 4);
  std::uint32_t stored = 0;
  ByteReader(bytes.last(4)).u32(stored);
  if (stored != crc(body)) throw CheckpointError("checksum mismatch (corrupt or truncated file)");

  ByteReader r(body.subspan(sizeof(kMagic)));
  std::uint32_t version = 0, count = 0;
  need(r.u32(version), "version");
  if (version != kVersion) {
    throw CheckpointError(
        fmt::format("format version {} (this build reads {})", version, kVersion));
  }
  Checkpoint c;
  need(r.u64(c.round), "round");
  need(r.u32(count), "section count");
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint32_t name_len = 0;
    std::uint64_t size = 0;
    need(r.u32(name_len), "section name length");
    const auto name = take(r, name_len, "section name");
    need(r.u64(size), "section size");
    const auto data = take(r, size, "section");
    std::string key(name.begin(), name.end());
    if (!c.sections.emplace(key, std::vector<std::uint8_t>(data.begin(), data.end())).second) {
      throw CheckpointError(fmt::format("section '{}' appears twice", key));
    }
  }
  if (!r.done()) throw CheckpointError("bytes after the last section");
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
    const std::vector<std::uint8_t> raw((std::istreambuf_iterator<char>(in)),
                                        std::istreambuf_iterator<char>());
    if (!in && !in.eof()) {
      loaded.skipped.push_back(fmt::format("{}: unreadable", file.string()));
      continue;
    }
    try {
      Checkpoint c = parseCheckpoint(raw);
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

}  // namespace phalanx::train
