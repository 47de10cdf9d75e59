// The highest round this peer has signed a statement for, kept in a file beside its checkpoints
// so that a restarted peer never signs a round again (with another vector that would be a proof
// of equivocation against an honest peer). Written before each new round's first signature; a
// process crash keeps it, a power loss may not (the file is not synced).
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace phalanx::node {

class SignedRounds {
 public:
  // `file` is created when missing; the error names it.
  static std::expected<std::unique_ptr<SignedRounds>, std::string> open(
      const std::filesystem::path& file);
  ~SignedRounds();
  SignedRounds(const SignedRounds&) = delete;
  SignedRounds& operator=(const SignedRounds&) = delete;

  // Whether `round` may be signed: not when an earlier run of this peer signed it or a later
  // one. Records it.
  bool mayLog(std::uint64_t round);
  // The highest round an earlier run signed (none: nothing was).
  std::optional<std::uint64_t> before() const { return before_; }

 private:
  SignedRounds(int fd, std::optional<std::uint64_t> before) : fd_(fd), before_(before) {}
  int fd_;
  std::optional<std::uint64_t> before_;
  std::optional<std::uint64_t> last_;
};

}  // namespace phalanx::node
