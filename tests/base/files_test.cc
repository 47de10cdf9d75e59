// Owner-only files (base/files.h): the mode from the start, whatever the umask, and a whole file.
#include "base/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>

#include "tests/support/temp_dir.h"

namespace phalanx::base {
namespace {

namespace fs = std::filesystem;

TEST(Files, AFileGetsItsModeWhateverTheUmaskAndReplacesTheOldOneWhole) {
  const testing::TempDir dir;
  const fs::path file = dir.path() / "token";
  const mode_t old = ::umask(0);  // a umask that would leave it world-readable
  ASSERT_TRUE(writeFileWithMode(file, "first\n", 0600));
  ASSERT_TRUE(writeFileWithMode(file, "second\n", 0600));
  ::umask(old);
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  std::ifstream in(file);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "second\n");
  EXPECT_FALSE(fs::exists(dir.path() / "token.tmp"));
  const auto refused = writeFileWithMode(dir.path() / "missing" / "x", "y", 0600);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("missing/x"), std::string::npos);
}

}  // namespace
}  // namespace phalanx::base
