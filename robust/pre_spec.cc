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
    if (value.empty() || *end != '\0') {
      return std::unexpected(
          fmt::format("pre-aggregator '{}': the parameter must be a number > 0", spec));
    }
  }
  const auto kind = kPreKinds.parse(name);
  if (!kind) {
    return std::unexpected(
        fmt::format("unknown pre-aggregator '{}' (allowed: nnm, clip:C, arc, bucketing:S)", spec));
  }
  if (takesParam(*kind) != (colon != std::string::npos)) {
    return std::unexpected(
        takesParam(*kind)
            ? fmt::format("pre-aggregator '{}' needs a parameter, e.g. {}:2", name, name)
            : fmt::format("pre-aggregator '{}' takes no parameter", name));
  }
  const PreSpec parsed{.kind = *kind, .param = param};
  if (auto ok = checkPreSpec(parsed); !ok) return std::unexpected(ok.error());
  return parsed;
}

std::expected<void, std::string> checkPreSpec(const PreSpec& spec) {
  if (!takesParam(spec.kind)) return {};
  if (!(spec.param > 0) || !std::isfinite(spec.param)) {
    return std::unexpected(
        fmt::format("pre-aggregator '{}': the parameter must be a number > 0", preSpecText(spec)));
  }
  if (spec.kind == PreKind::kBucketing && spec.param != std::floor(spec.param)) {
    return std::unexpected(
        fmt::format("bucketing: the bucket size must be whole, got '{}'", preSpecText(spec)));
  }
  return {};
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
  if (takesParam(spec.kind)) return fmt::format("{}:{}", name, spec.param);
  return std::string(name);
}

}  // namespace phalanx::robust
