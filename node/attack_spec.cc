#include "node/attack_spec.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "base/text.h"

namespace phalanx::node {

std::expected<AttackSpec, std::string> AttackSpec::parse(std::string_view name) {
  if (name.starts_with(kEquivocatePrefix)) {
    if (auto v = robust::kAttacks.parse(name.substr(kEquivocatePrefix.size()))) {
      return AttackSpec{.kind = Misbehaviour::kVector, .vector = *v, .equivocate = true};
    }
  } else if (auto v = robust::kAttacks.parse(name)) {
    return AttackSpec{.kind = Misbehaviour::kVector, .vector = *v};
  } else if (auto m = kMisbehaviours.parse(name)) {
    return AttackSpec{.kind = *m};
  }
  std::vector<std::string> known;
  for (const auto& n : robust::kAttacks.names()) {
    known.emplace_back(n);
    known.push_back(std::string(kEquivocatePrefix) + std::string(n));
  }
  for (const auto& n : kMisbehaviours.names()) known.emplace_back(n);
  return std::unexpected(fmt::format(
      "'{}' is not something a node can run{} (vector attacks: {}, each also as {}NAME; also {}; "
      "crash, hang and slow are faults for `phalanx inject`)",
      name, base::didYouMean(name, known), fmt::join(robust::kAttacks.names(), ", "),
      kEquivocatePrefix, fmt::join(kMisbehaviours.names(), ", ")));
}

std::string AttackSpec::name() const {
  if (kind != Misbehaviour::kVector) return std::string(kMisbehaviours.name(kind));
  return fmt::format("{}{}", equivocate ? kEquivocatePrefix : "", robust::kAttacks.name(vector));
}

bool AttackSpec::wire() const {
  return kind == Misbehaviour::kGarbage || kind == Misbehaviour::kWrongDim ||
         kind == Misbehaviour::kReplay;
}

bool AttackSpec::protocol() const {
  return kind == Misbehaviour::kStall || kind == Misbehaviour::kRoundLie ||
         kind == Misbehaviour::kResyncFlood || kind == Misbehaviour::kKeyframeSpam;
}

}  // namespace phalanx::node
