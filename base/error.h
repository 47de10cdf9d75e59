// The one error type of phalanx's libraries: a kind and a one-line message that names the file,
// field or peer at fault. Every exception below the command line is an Error (the classes each
// library names — ConfigError, TopologyError, ... — are its kinds with a constructor), so the
// command line catches one type and maps kinds to exit codes. Peer input is never thrown:
// decoders return std::expected and count what they drop.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace phalanx::base {

enum class ErrorKind {
  kConfig,      // a config file or --set value
  kTopology,    // a topology file or generator parameter
  kGrid,        // an experiment grid file
  kData,        // a dataset file (missing, truncated, corrupt)
  kFile,        // a .npy array or other input file
  kCheckpoint,  // a checkpoint that cannot be written or read back
};

// "config", "topology", ...
std::string_view errorKindName(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// A kind's own name for the type: `class ConfigError : public ErrorOf<ErrorKind::kConfig>`.
template <ErrorKind K>
class ErrorOf : public Error {
 public:
  explicit ErrorOf(const std::string& message) : Error(K, message) {}
};

// Bad configuration (a config file, a --set value, or what a library is built with). what() is
// one line: "FILE: FIELD: problem (allowed: ...)". Shared by node/ and train/.
class ConfigError : public ErrorOf<ErrorKind::kConfig> {
 public:
  using ErrorOf::ErrorOf;
};

}  // namespace phalanx::base
