// The reference of every config field (docs/CONFIG.md) and the resolved config (`phalanx config
// show`), both from what the loader itself reads (configFields, node/config.h) and one line of
// meaning per field kept here — a field the loader reads without a line here fails
// `ConfigReference.*` in CI, and so does a docs/CONFIG.md that is not this file's output.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/field_log.h"

namespace phalanx::node {

// The field's line of meaning ("byzantine.ID.attack" for every byzantine entry); "" when none.
std::string_view fieldMeaning(std::string_view path);
// Fields the loader reads that have no meaning here, and meanings of fields it no longer reads.
std::vector<std::string> fieldsWithoutMeaning();
std::vector<std::string> meaningsWithoutField();

// docs/CONFIG.md: every field, what it takes, its default, its meaning, by section.
std::string configReference();

// A resolved config as YAML: every field in the loader's order, each with its value (the
// default where the file left it out) — what a node started with these fields runs with.
std::string resolvedYaml(const base::FieldLog& fields);

}  // namespace phalanx::node
