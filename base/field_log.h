// One field of a validated YAML read (base/yaml_fields.h), as a reference or a resolved config
// shows it; a header of its own so that what shows configs needs no YAML library.
#pragma once

#include <string>
#include <vector>

namespace phalanx::base {

// What one read saw: the field's full path, what it takes ("a number in [0, 1]", "one of: a,
// b"), and its value after the read (the default where the field was absent) as YAML flow text.
// For a reference of the fields (docs/CONFIG.md) and for a resolved config (`config show`).
struct FieldRecord {
  std::string path;
  std::string kind;
  std::string value;
};
using FieldLog = std::vector<FieldRecord>;

}  // namespace phalanx::base
