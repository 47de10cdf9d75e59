// The one format of every log line — the command line's, a node's (its stderr and
// DIR/node-K.log) and a simulation's (DIR/simulation.log): ISO-8601 time, level, who speaks
// (phalanx, node-K), the message. One home, so a grep or a log shipper reads them all alike.
#pragma once

namespace phalanx::base {

inline constexpr const char* kLogPattern = "%Y-%m-%dT%H:%M:%S.%e %^%l%$ %n: %v";

}  // namespace phalanx::base
