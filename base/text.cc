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

namespace {

// Optimal string alignment distance, case ignored.
std::size_t editDistance(std::string_view a, std::string_view b) {
  const auto lower = [](char c) { return char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c); };
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::optional<std::string> closestName(std::string_view word,
                                       const std::vector<std::string>& names) {
  if (word.size() < 3) return std::nullopt;  // one letter off a two-letter word is no typo
  const std::size_t limit = std::clamp<std::size_t>(word.size() / 3, 1, 3);
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  for (const auto& name : names) {
    const std::size_t d = editDistance(word, name);
    if (d < best_distance && d > 0) {
      best = name;
      best_distance = d;
    }
  }
  return best;
}

std::string didYouMean(std::string_view word, const std::vector<std::string>& names) {
  const auto name = closestName(word, names);
  return name ? fmt::format(" (did you mean '{}'?)", *name) : std::string();
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
