#include "node/signed_rounds.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "base/bytes.h"

namespace phalanx::node {

std::expected<std::unique_ptr<SignedRounds>, std::string> SignedRounds::open(
    const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return std::unexpected(fmt::format("{}: cannot open: {}", file.string(), std::strerror(errno)));
  std::array<std::uint8_t, 8> bytes{};
  const ssize_t n = ::pread(fd, bytes.data(), bytes.size(), 0);
  std::optional<std::uint64_t> before;
  if (n == ssize_t(bytes.size())) {
    before = base::loadLittle(bytes, bytes.size());
  } else if (n != 0) {
    ::close(fd);
    return std::unexpected(
        fmt::format("{}: not a signed-rounds record ({} bytes)", file.string(), n < 0 ? 0 : n));
  }
  return std::unique_ptr<SignedRounds>(new SignedRounds(fd, before));
}

SignedRounds::~SignedRounds() { ::close(fd_); }

bool SignedRounds::mayLog(std::uint64_t round) {
  if (before_ && round <= *before_) return false;
  if (last_ && round <= *last_) return true;  // this run's round, already recorded
  std::array<std::uint8_t, 8> bytes{};
  base::storeLittle(round, bytes, bytes.size());
  if (::pwrite(fd_, bytes.data(), bytes.size(), 0) != ssize_t(bytes.size())) return false;
  last_ = round;
  return true;
}

}  // namespace phalanx::node
