// Writing a small file whole, with the permissions it must have from the moment it exists (a key
// or a token: 0600), replacing what was there only once it is complete.
#pragma once

#include <sys/types.h>

#include <expected>
#include <filesystem>
#include <string>
#include <string_view>

namespace phalanx::base {

// `bytes` into `file` (through FILE.tmp, created with `mode`, then renamed over it). The error
// names the file and why.
std::expected<void, std::string> writeFileWithMode(const std::filesystem::path& file,
                                                   std::string_view bytes, mode_t mode);

}  // namespace phalanx::base
