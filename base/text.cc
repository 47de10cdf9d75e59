#include "base/text.h"

#include <fmt/format.h>

#include <charconv>

namespace phalanx::base {

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> out;
  for (std::size_t at = 0;;) {
    const std::size_t end = std::min(text.find(separator, at), text.size());
    out.emplace_back(text.substr(at, end - at));
    if (end == text.size()) return out;
    at = end + 1;
  }
}

std::expected<std::vector<std::uint32_t>, std::string> parseIds(std::string_view text) {
  std::vector<std::uint32_t> out;
  if (text.empty()) return out;
  for (const std::string& item : split(text, ',')) {
    std::uint32_t id = 0;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), id);
    if (item.empty() || error != std::errc() || end != item.data() + item.size()) {
      return std::unexpected(fmt::format("'{}' is not a node id", item));
    }
    out.push_back(id);
  }
  return out;
}

}  // namespace phalanx::base
