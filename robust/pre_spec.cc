#include "robust/pre_spec.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace phalanx::robust {

std::expected<PreSpec, std::string> parsePreSpec(std::string_view text) {
  const std::string spec(text);
  const auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  double param = 0;
  if (colon != std::string::npos) {
    const std::string value = spec.substr(colon + 1);
    char* end = nullptr;
    param = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !(param > 0) || !std::isfinite(param)) {
      return std::unexpected(
          fmt::format("pre-aggregator '{}': the parameter must be a number > 0", spec));
    }
  }
  const auto kind = kPreKinds.parse(name);
  if (!kind) {
    return std::unexpected(
        fmt::format("unknown pre-aggregator '{}' (allowed: nnm, clip:C, arc, bucketing:S)", spec));
  }
  const bool wants_param = *kind == PreKind::kClip || *kind == PreKind::kBucketing;
  if (wants_param != (colon != std::string::npos)) {
    return std::unexpected(
        wants_param ? fmt::format("pre-aggregator '{}' needs a parameter, e.g. {}:2", name, name)
                    : fmt::format("pre-aggregator '{}' takes no parameter", name));
  }
  if (*kind == PreKind::kBucketing && param != std::floor(param)) {
    return std::unexpected(fmt::format("bucketing: the bucket size must be whole, got '{}'", spec));
  }
  return PreSpec{.kind = *kind, .param = param};
}

std::expected<std::vector<PreSpec>, std::string> parsePreSpecs(std::span<const std::string> texts) {
  std::vector<PreSpec> specs;
  for (const std::string& text : texts) {
    auto spec = parsePreSpec(text);
    if (!spec) return std::unexpected(spec.error());
    specs.push_back(*spec);
  }
  return specs;
}

std::string preSpecText(const PreSpec& spec) {
  const std::string_view name = kPreKinds.name(spec.kind);
  if (spec.kind == PreKind::kClip || spec.kind == PreKind::kBucketing)
    return fmt::format("{}:{}", name, spec.param);
  return std::string(name);
}

}  // namespace phalanx::robust
