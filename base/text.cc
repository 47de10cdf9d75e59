#include "base/text.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

namespace phalanx::base {

std::vector<std::string> splitWords(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  for (const char c : text) {
    if (c == ' ' || c == '\t' || c == '\n') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

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
  const auto number = [](std::string_view s) -> std::optional<std::uint32_t> {
    std::uint32_t id = 0;
    const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), id);
    if (s.empty() || error != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return id;
  };
  constexpr std::uint64_t kMaxRange = 1u << 20;
  for (const std::string& item : split(text, ',')) {
    const std::size_t dash = item.find('-');
    if (dash == std::string::npos || dash == 0) {
      const auto id = number(item);
      if (!id) return std::unexpected(fmt::format("'{}' is not a node id", item));
      out.push_back(*id);
      continue;
    }
    const auto first = number(std::string_view(item).substr(0, dash));
    const auto last = number(std::string_view(item).substr(dash + 1));
    if (!first || !last || *first > *last) {
      return std::unexpected(fmt::format("'{}' is not a node id range (FIRST-LAST)", item));
    }
    if (std::uint64_t(*last) - *first >= kMaxRange) {
      return std::unexpected(fmt::format("'{}': a range of more than {} ids", item, kMaxRange));
    }
    for (std::uint64_t id = *first; id <= *last; ++id) out.push_back(std::uint32_t(id));
  }
  return out;
}

std::string withId(std::string text, std::uint32_t id) {
  const std::string value = std::to_string(id);
  for (std::size_t at = 0; (at = text.find("{id}", at)) != std::string::npos; at += value.size())
    text.replace(at, 4, value);
  return text;
}

}  // namespace phalanx::base
