// One pre-aggregator as a config names it ("nnm", "clip:2.5", "arc", "bucketing:2"), parsed once
// where the text enters (mixing.pre, `phalanx lab --pre`) into a kind and its parameter.
#pragma once

#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/names.h"

namespace phalanx::robust {

enum class PreKind : std::uint8_t { kNnm, kClip, kArc, kBucketing };
inline constexpr auto kPreKinds = base::nameTable<PreKind>({{PreKind::kNnm, "nnm"},
                                                            {PreKind::kClip, "clip"},
                                                            {PreKind::kArc, "arc"},
                                                            {PreKind::kBucketing, "bucketing"}});

struct PreSpec {
  PreKind kind = PreKind::kNnm;
  double param = 0;  // clip: the radius C; bucketing: the bucket size S (whole); else 0
  bool operator==(const PreSpec&) const = default;
};

// Whether the kind takes a parameter (clip's radius, bucketing's size).
constexpr bool takesParam(PreKind kind) {
  return kind == PreKind::kClip || kind == PreKind::kBucketing;
}
// The rules a spec's parameter must keep, however the spec was made (parsed or built in code):
// > 0 and finite where the kind takes one, whole for bucketing.
std::expected<void, std::string> checkPreSpec(const PreSpec& spec);
// "clip:2.5" -> {kClip, 2.5}; an error names the text and what is wrong.
std::expected<PreSpec, std::string> parsePreSpec(std::string_view text);
std::expected<std::vector<PreSpec>, std::string> parsePreSpecs(std::span<const std::string> texts);
// The spec as a config writes it ("clip:2.5").
std::string preSpecText(const PreSpec& spec);

}  // namespace phalanx::robust
