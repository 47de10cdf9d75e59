// A run's output folder (launch, simulate): new, empty, or holding an earlier run that --force
// clears first — never the files of two runs side by side, which the summary would read as one
// (a 4-peer run into a 10-peer run's folder once reported the stale peers' accuracy).
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <vector>

namespace phalanx::tools {

// Whether a file name is one a run writes at the top of its folder (node-K.jsonl, summary.json,
// report.html, ...).
bool isRunFile(const std::string& name);

// Makes `out` ready for a new run. When it holds an earlier run's files: an error naming them,
// or, with `force`, those files removed (anything else in the folder is left alone).
std::expected<void, std::string> prepareRunFolder(const std::filesystem::path& out, bool force);

}  // namespace phalanx::tools
