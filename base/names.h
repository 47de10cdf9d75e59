// One table per set of names (rules, attacks, feedback kinds, refusal reasons): each enum value
// with the one spelling configs, metrics and tables use. Names are parsed once, where text
// enters (a config, a command line); inside, code compares enums.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace phalanx::base {

template <class E>
struct Named {
  E value;
  std::string_view name;
};

template <class E, std::size_t N>
struct NameTable {
  std::array<Named<E>, N> entries;

  constexpr std::optional<E> parse(std::string_view name) const {
    for (const Named<E>& e : entries) {
      if (e.name == name) return e.value;
    }
    return std::nullopt;
  }
  // The value's name; "unknown" for a value the table does not list.
  constexpr std::string_view name(E value) const {
    for (const Named<E>& e : entries) {
      if (e.value == value) return e.name;
    }
    return "unknown";
  }
  constexpr bool contains(std::string_view name) const { return parse(name).has_value(); }
  constexpr bool contains(E value) const {
    for (const Named<E>& e : entries) {
      if (e.value == value) return true;
    }
    return false;
  }
  // Every name, in table order (for "allowed: ..." in errors and for grids that iterate).
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(N);
    for (const Named<E>& e : entries) out.emplace_back(e.name);
    return out;
  }
};

// `inline constexpr auto kRules = base::nameTable<Rule>({{Rule::kNna, "nna"}, ...});`
template <class E, std::size_t N>
constexpr NameTable<E, N> nameTable(const Named<E> (&entries)[N]) {
  NameTable<E, N> table{};
  for (std::size_t i = 0; i < N; ++i) table.entries[i] = entries[i];
  return table;
}

}  // namespace phalanx::base
