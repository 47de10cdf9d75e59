// The two JSON pieces phalanx writes by hand (round logs, subcommand output): numbers
// (non-finite as null, which JSON has no spelling for) and escaped strings.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>

namespace phalanx::node {

inline std::string jsonNumber(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

inline std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", int(c));
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace phalanx::node
