// What a Byzantine peer runs instead of the honest protocol (docs/PROTOCOL.md "Threat model"),
// parsed once from the name a config entry, `--attack` or `inject attack NAME` gives: a
// robust/ vector attack, optionally crafted per target ("equivocate:NAME"), or a misbehaviour
// node/ carries out itself.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

#include "base/names.h"
#include "robust/attacks.h"

namespace phalanx::node {

enum class Misbehaviour : std::uint8_t {
  kHonest,     // "none": named Byzantine, honest until `inject attack NAME`
  kVector,     // the robust/ attack AttackSpec::vector
  kLabelflip,  // the honest protocol, trained on labels y -> classes-1-y
  kSilent,     // connects and answers, never sends a round message
  // Wire level (node/peer_node.h says what each sends).
  kGarbage,
  kWrongDim,
  kReplay,
  // Protocol level, with honest vectors: `stall` sends each round's message at 90 % of the
  // deadline ceiling, `round_lie` claims far-future, past and oscillating rounds, `resync_flood`
  // asks every neighbour for a keyframe every round, `keyframe_spam` sends keyframes only.
  kStall,
  kRoundLie,
  kResyncFlood,
  kKeyframeSpam,
};
// Every misbehaviour but kVector, whose names are robust::kAttacks'.
inline constexpr auto kMisbehaviours =
    base::nameTable<Misbehaviour>({{Misbehaviour::kHonest, "none"},
                                   {Misbehaviour::kLabelflip, "labelflip"},
                                   {Misbehaviour::kSilent, "silent"},
                                   {Misbehaviour::kGarbage, "garbage"},
                                   {Misbehaviour::kWrongDim, "wrong_dim"},
                                   {Misbehaviour::kReplay, "replay"},
                                   {Misbehaviour::kStall, "stall"},
                                   {Misbehaviour::kRoundLie, "round_lie"},
                                   {Misbehaviour::kResyncFlood, "resync_flood"},
                                   {Misbehaviour::kKeyframeSpam, "keyframe_spam"}});

inline constexpr std::string_view kEquivocatePrefix = "equivocate:";

struct AttackSpec {
  Misbehaviour kind = Misbehaviour::kHonest;
  robust::AttackId vector = robust::AttackId::kSignflip;  // kind == kVector
  bool equivocate = false;  // kVector crafted per target: each neighbour gets its own vector

  // "alie", "equivocate:alie", "stall", "none", ... Errors list every name.
  static std::expected<AttackSpec, std::string> parse(std::string_view name);
  // The name parse() reads back.
  std::string name() const;

  bool honest() const { return kind == Misbehaviour::kHonest; }
  bool wire() const;      // garbage, wrong_dim, replay
  bool protocol() const;  // stall, round_lie, resync_flood, keyframe_spam
  friend bool operator==(const AttackSpec&, const AttackSpec&) = default;
};

}  // namespace phalanx::node
