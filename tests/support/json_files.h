// Reading what `phalanx` writes, for end-to-end tests: a whole file, a JSON file, JSON lines
// (a line cut short by a kill is skipped). Header-only; for tests linking nlohmann_json.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace phalanx::testing {

inline std::string readFile(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline nlohmann::json jsonFile(const std::filesystem::path& file) {
  return nlohmann::json::parse(readFile(file), nullptr, false);
}

inline std::vector<nlohmann::json> jsonLines(const std::filesystem::path& file) {
  std::vector<nlohmann::json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

}  // namespace phalanx::testing
