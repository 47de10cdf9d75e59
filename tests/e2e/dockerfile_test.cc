// The Dockerfile, checked without docker (no registry for base images is reachable here): every
// script it runs exists and takes the arguments it gets, every CMake option it sets is one of
// ours, the binary lands where the runtime stage copies it from, and the runtime stage installs
// the package of every shared library the built `phalanx` links.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/json_files.h"
#include "tests/support/process.h"

namespace phalanx {
namespace {

using ::testing::HasSubstr;
using testing::phalanxBinary;
using testing::readFile;
using testing::runProcess;
using testing::sourceDir;
namespace fs = std::filesystem;

// The Dockerfile's instructions, continuation lines joined, comments dropped.
std::vector<std::string> instructions() {
  std::vector<std::string> out;
  std::istringstream in(readFile(fs::path(sourceDir()) / "Dockerfile"));
  std::string line, pending;
  while (std::getline(in, line)) {
    if (pending.empty() && (line.empty() || line[0] == '#')) continue;
    if (!line.empty() && line.back() == '\\') {
      pending += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    out.push_back(pending + line);
    pending.clear();
  }
  return out;
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The packages the runtime stage installs.
std::set<std::string> runtimePackages(const std::vector<std::string>& lines) {
  std::set<std::string> out;
  bool runtime = false;
  for (const auto& l : lines) {
    if (l.starts_with("FROM ")) runtime = l.find(" AS ") == std::string::npos;
    if (!runtime || !l.starts_with("RUN ") || l.find("apt-get install") == std::string::npos)
      continue;
    const auto w = words(l.substr(l.find("apt-get install")));
    for (std::size_t k = 2; k < w.size() && w[k] != "&&"; ++k) {
      if (!w[k].starts_with("-")) out.insert(w[k]);
    }
  }
  return out;
}

TEST(Dockerfile, EveryScriptAndOptionItUsesExistsHere) {
  const auto lines = instructions();
  ASSERT_FALSE(lines.empty());
  const std::string cmake = readFile(fs::path(sourceDir()) / "CMakeLists.txt");
  int scripts = 0, options = 0;
  for (const auto& l : lines) {
    if (!l.starts_with("RUN ")) continue;
    for (const auto& w : words(l)) {
      if (w.starts_with("./tools/")) {  // a script of ours, with the arguments it gets
        ++scripts;
        EXPECT_TRUE(fs::exists(fs::path(sourceDir()) / w)) << w;
      }
      if (w.starts_with("-DPHALANX_")) {  // one of our CMake options
        ++options;
        const std::string name = w.substr(2, w.find('=') - 2);
        EXPECT_THAT(cmake, HasSubstr("option(" + name + " ")) << name;
      }
    }
  }
  EXPECT_GE(scripts, 1);
  EXPECT_GE(options, 3);
  // install-deps --node: a mode the script has, and one it finishes (a no-op where the full
  // list is installed, as on CI).
  const auto deps = runProcess(sourceDir() + "/tools/install-deps --node");
  EXPECT_EQ(deps.exit_code, 0) << deps.output;
  EXPECT_EQ(runProcess(sourceDir() + "/tools/install-deps --nodes").exit_code, 2);
  // The runtime stage copies /usr/local/bin/phalanx: where `cmake --install --prefix
  // /usr/local` puts it.
  EXPECT_THAT(readFile(fs::path(sourceDir()) / "tools/CMakeLists.txt"),
              HasSubstr("install(TARGETS phalanx RUNTIME DESTINATION bin)"));
  bool copies = false;
  for (const auto& l : lines)
    copies |= l.starts_with("COPY --from=build /usr/local/bin/phalanx /usr/local/bin/phalanx");
  EXPECT_TRUE(copies);
}

TEST(Dockerfile, TheRuntimeStageInstallsThePackageOfEverySharedLibraryPhalanxLinks) {
  const auto packages = runtimePackages(instructions());
  ASSERT_FALSE(packages.empty());
  EXPECT_TRUE(packages.contains("dataset-fashion-mnist"));
  // Where each library the built binary links comes from (the image builds without CUDA).
  const auto ldd = runProcess("ldd " + phalanxBinary());
  ASSERT_EQ(ldd.exit_code, 0) << ldd.output;
  const std::regex lib(R"(=> (/\S+))");
  const std::set<std::string> in_base{"libc6", "libgcc-s1", "libstdc++6"};
  int checked = 0;
  for (auto it = std::sregex_iterator(ldd.output.begin(), ldd.output.end(), lib);
       it != std::sregex_iterator(); ++it) {
    const std::string path = (*it)[1];
    if (path.find("/cuda") != std::string::npos) continue;
    const auto owner =
        runProcess("dpkg -S " + fs::canonical(path).string() + " 2>/dev/null || dpkg -S " + path);
    ASSERT_EQ(owner.exit_code, 0) << path << " belongs to no Debian package: " << owner.output;
    const std::string package = owner.output.substr(0, owner.output.find(':'));
    EXPECT_TRUE(packages.contains(package) || in_base.contains(package))
        << path << " comes from " << package << ", which the runtime stage does not install";
    ++checked;
  }
  EXPECT_GE(checked, 8);
  // Every package named exists in this Debian (installed here as the dev packages' dependencies).
  for (const auto& p : packages) {
    const auto status = runProcess("dpkg-query -W -f='${Status}' " + p);
    EXPECT_THAT(status.output, HasSubstr("install ok installed")) << p;
  }
}

}  // namespace
}  // namespace phalanx
