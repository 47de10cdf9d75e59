#include "tools/run_folder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <system_error>

namespace phalanx::tools {
namespace {

// prefix-K.suffix, K a peer id.
bool perPeer(std::string_view name, std::string_view prefix, std::string_view suffix) {
  if (!name.starts_with(prefix) || !name.ends_with(suffix)) return false;
  const std::string_view id =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  return !id.empty() &&
         std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

bool isRunFile(const std::string& name) {
  static constexpr std::array<std::string_view, 6> kWhole = {"summary.json",   "report.html",
                                                             "monitor.jsonl",  "simulation.json",
                                                             "simulation.log", "pids.json"};
  if (std::find(kWhole.begin(), kWhole.end(), name) != kWhole.end()) return true;
  for (const std::string_view suffix : {".jsonl", ".npy", ".log", ".pid"}) {
    if (perPeer(name, "node-", suffix)) return true;
  }
  return perPeer(name, "stdout-", ".log");
}

std::expected<void, std::string> prepareRunFolder(const std::filesystem::path& out, bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec))
    return std::unexpected(fmt::format("--out {}: not a folder", out.string()));
  std::vector<std::string> earlier;
  if (fs::is_directory(out, ec)) {
    for (const auto& entry : fs::directory_iterator(out, ec)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_regular_file(ec) && isRunFile(name)) earlier.push_back(name);
    }
  }
  std::sort(earlier.begin(), earlier.end());
  if (!earlier.empty() && !force) {
    const std::size_t shown = std::min<std::size_t>(earlier.size(), 4);
    return std::unexpected(fmt::format(
        "--out {} holds an earlier run ({}{}): its files would be read as part of this one; "
        "choose a new folder, or pass --force to delete that run's files first",
        out.string(), fmt::join(earlier.begin(), earlier.begin() + long(shown), ", "),
        earlier.size() > shown ? fmt::format(" and {} more", earlier.size() - shown) : ""));
  }
  for (const std::string& name : earlier) {
    if (!fs::remove(out / name, ec) && ec)
      return std::unexpected(
          fmt::format("--force: cannot delete {}: {}", (out / name).string(), ec.message()));
  }
  fs::create_directories(out, ec);
  if (ec) return std::unexpected(fmt::format("--out {}: {}", out.string(), ec.message()));
  return {};
}

}  // namespace phalanx::tools
