// Crash-safe checkpoints of a node's state (model, momentum, error-feedback and replica state,
// RNG, round) as named byte sections in one checksummed file. Writes are atomic (temporary
// file, fsync, rename, fsync of the folder); the newest `keep` files are kept, and loading
// skips a corrupt or truncated file in favour of the one before it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/error.h"

namespace phalanx::train {

// A checkpoint that cannot be written, or a folder none of whose files reads back.
class CheckpointError : public base::ErrorOf<base::ErrorKind::kCheckpoint> {
 public:
  using ErrorOf::ErrorOf;
};

struct Checkpoint {
  std::uint64_t round = 0;
  std::map<std::string, std::vector<std::uint8_t>> sections;

  void putFloats(const std::string& name, std::span<const float> values);
  void putU64s(const std::string& name, std::span<const std::uint64_t> values);
  // The section as values; throws CheckpointError when it is missing or of the wrong size.
  std::vector<float> floats(const std::string& name) const;
  std::vector<std::uint64_t> u64s(const std::string& name) const;
  bool has(const std::string& name) const { return sections.contains(name); }
};

// The file's bytes: magic, version, round, sections, CRC-32 of everything before it.
std::vector<std::uint8_t> serializeCheckpoint(const Checkpoint& c);
// Throws CheckpointError saying what is wrong (magic, version, truncation, checksum, layout).
Checkpoint parseCheckpoint(std::span<const std::uint8_t> bytes);

class CheckpointStore {
 public:
  explicit CheckpointStore(std::filesystem::path dir, std::size_t keep = 2);

  // Writes checkpoint-<round>.phx atomically, then deletes all but the newest `keep`.
  // Throws CheckpointError on I/O failure (the previous checkpoints are untouched).
  void save(const Checkpoint& c);

  struct Loaded {
    std::optional<Checkpoint> checkpoint;  // none when no file was usable
    std::filesystem::path file;
    std::vector<std::string> skipped;  // "file: why" for newer files that were unusable
  };
  // The newest checkpoint that parses and holds the round its name says.
  Loaded loadLatest() const;

  // checkpoint-*.phx files, newest round first.
  std::vector<std::filesystem::path> files() const;

 private:
  std::filesystem::path dir_;
  std::size_t keep_;
};

}  // namespace phalanx::train
