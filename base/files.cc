#include "base/files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace phalanx::base {

std::expected<void, std::string> writeFileWithMode(const std::filesystem::path& file,
                                                   std::string_view bytes, mode_t mode) {
  const std::filesystem::path tmp = file.string() + ".tmp";
  const auto failed = [&](const char* what) {
    return std::unexpected(fmt::format("{}: {}: {}", file.string(), what, std::strerror(errno)));
  };
  // O_EXCL after removing a leftover: the mode given here is the file's, whatever umask says
  // (fchmod), and nobody else's file is written through.
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return failed("cannot create");
  bool ok = ::fchmod(fd, mode) == 0;
  for (std::size_t done = 0; ok && done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += std::size_t(n);
  }
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), file.c_str()) != 0) {
    const auto error = failed("cannot write");
    ::unlink(tmp.c_str());
    return error;
  }
  return {};
}

}  // namespace phalanx::base
