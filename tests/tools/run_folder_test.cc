// The run folder's claim (tools/run_folder.h): which names are a run's, a folder with an earlier
// run refused or, forced, cleared of that run's files only.
#include "tools/run_folder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/temp_dir.h"

namespace phalanx::tools {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(RunFolder, KnowsARunsFilesByName) {
  for (const char* name : {"node-0.jsonl", "node-12.npy", "node-3.log", "stdout-4.log",
                           "summary.json", "report.html", "monitor.jsonl", "pids.json"})
    EXPECT_TRUE(isRunFile(name)) << name;
  for (const char* name : {"node-.jsonl", "node-x.jsonl", "notes.txt", "config.yaml",
                           "node-1.jsonl.bak", "my-summary.json"})
    EXPECT_FALSE(isRunFile(name)) << name;
}

TEST(RunFolder, ANewOrForeignFolderIsTakenAnEarlierRunIsRefusedUnlessForced) {
  testing::TempDir dir;
  EXPECT_TRUE(prepareRunFolder(dir.path() / "new" / "deeper", false).has_value());
  EXPECT_TRUE(fs::is_directory(dir.path() / "new" / "deeper"));
  const fs::path out = dir.path() / "run";
  fs::create_directories(out);
  std::ofstream(out / "notes.txt") << "mine\n";
  EXPECT_TRUE(prepareRunFolder(out, false).has_value());  // nothing of a run in it
  for (int i = 0; i < 6; ++i) std::ofstream(out / ("node-" + std::to_string(i) + ".jsonl")) << "{}";
  const auto refused = prepareRunFolder(out, false);
  ASSERT_FALSE(refused.has_value());
  EXPECT_THAT(refused.error(), HasSubstr("node-0.jsonl, node-1.jsonl"));
  EXPECT_THAT(refused.error(), HasSubstr("and 2 more"));
  EXPECT_THAT(refused.error(), HasSubstr("--force"));
  ASSERT_TRUE(prepareRunFolder(out, true).has_value());
  EXPECT_FALSE(fs::exists(out / "node-5.jsonl"));
  EXPECT_TRUE(fs::exists(out / "notes.txt"));  // not a run's: left alone
  std::ofstream(dir.path() / "file") << "x";
  EXPECT_FALSE(prepareRunFolder(dir.path() / "file", true).has_value());
}

}  // namespace
}  // namespace phalanx::tools
