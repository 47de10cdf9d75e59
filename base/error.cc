#include "base/error.h"

namespace phalanx::base {

std::string_view errorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kConfig:
      return "config";
    case ErrorKind::kTopology:
      return "topology";
    case ErrorKind::kGrid:
      return "grid";
    case ErrorKind::kData:
      return "data";
    case ErrorKind::kFile:
      return "file";
    case ErrorKind::kCheckpoint:
      return "checkpoint";
  }
  return "unknown";
}

}  // namespace phalanx::base
