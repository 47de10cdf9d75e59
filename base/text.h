// Splitting of the comma- and semicolon-separated lists the command line and grids use, node-id
// lists, and "{id}" in per-node text; one home so every list reads the same way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace phalanx::base {

// The items between separators, empty ones included: "a,,b" → {a, "", b}; "" → {""}.
std::vector<std::string> split(std::string_view text, char separator);

// The words of a command line written with spaces (--wrap, --ssh): runs of whitespace separate,
// no quoting; "" → {}.
std::vector<std::string> splitWords(std::string_view text);

// `text` with every "{id}" replaced by `id` (per-node paths and commands: security.cert,
// launch --wrap).
std::string withId(std::string text, std::uint32_t id);

// Whether `id` is in a list of node ids (short lists: a scan).
inline bool containsId(const std::vector<std::uint32_t>& ids, std::uint32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// The name in `names` closest to `word` by edit distance (insertions, deletions, substitutions
// and swaps of neighbours, case ignored), if one is within a third of the word's length (at
// least 1, at most 3; none for words under 3 letters): "mixin" → "mixing", "alei" → "alie". For
// "did you mean" in errors.
std::optional<std::string> closestName(std::string_view word,
                                       const std::vector<std::string>& names);
// " (did you mean 'NAME'?)" for the closest name, or "".
std::string didYouMean(std::string_view word, const std::vector<std::string>& names);

// A comma-separated list of node ids and ranges ("3,7,10-15"), each a whole number below 2^32;
// an empty text is an empty list. The error names the item that is not an id or a range.
std::expected<std::vector<std::uint32_t>, std::string> parseIds(std::string_view text);

}  // namespace phalanx::base
