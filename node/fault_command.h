// One injected fault as a typed value, parsed once at the edge: `phalanx inject`, POST /control
// and a simulation's faults file all read their text with parseFaultCommand, so a typo fails where
// it was written (the command line, the file and line), not later inside a running node.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "node/attack_spec.h"

namespace phalanx::node::fault {

struct Crash {};  // connections closed without a Goodbye
struct Hang {     // the node's loop blocked (real time only)
  double seconds = 0;
};
struct Slow {  // every round starts this much later
  std::chrono::milliseconds by{0};
};
struct Delay {  // outgoing round messages leave this much late
  std::chrono::milliseconds by{0};
};
struct Drop {  // each outgoing round message is lost with this probability
  double probability = 0;
};
struct Corrupt {  // each outgoing round message has bytes flipped with this probability
  double probability = 0;
};
struct Partition {  // the links to these peers carry nothing
  std::vector<std::uint32_t> peers;
};
struct Heal {};  // clears slow, delay, drop, corrupt and partition
struct SwitchAttack {
  AttackSpec attack;  // honest ("none"), a vector attack, or a protocol role
};
struct Restart {};  // a crashed node resumes from its checkpoint (the simulation's faults only)

}  // namespace phalanx::node::fault

namespace phalanx::node {

using FaultCommand =
    std::variant<fault::Crash, fault::Hang, fault::Slow, fault::Delay, fault::Drop, fault::Corrupt,
                 fault::Partition, fault::Heal, fault::SwitchAttack, fault::Restart>;

// "crash", "hang SECONDS", "slow MS", "delay MS", "drop P", "corrupt P", "partition ID,ID,...",
// "heal", "attack NAME" (none, a vector attack, equivocate:NAME, or a protocol role: stall,
// round_lie, resync_flood, keyframe_spam), "restart". The error says what was wrong and what is
// allowed; words beyond the command's are an error too.
std::expected<FaultCommand, std::string> parseFaultCommand(std::string_view text);

// The command as parseFaultCommand reads it back (what `phalanx inject` sends and a log says).
std::string faultText(const FaultCommand& command);

// What became of a command sent to a running node (POST /control's answer).
enum class FaultOutcome : std::uint8_t {
  kApplied,
  kRefused,      // not applicable to this node now (the reason comes with it)
  kNotAnswered,  // its loop did not take it in time (busy or hung); it may still apply
};

}  // namespace phalanx::node
