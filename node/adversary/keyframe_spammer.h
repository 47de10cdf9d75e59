// A protocol role (docs/PROTOCOL.md): a peer that sends honest vectors, every message a keyframe
// (the whole vector, where its neighbours' replicas expect deltas), to cost them bandwidth.
#pragma once

#include "node/adversary/adversary.h"

namespace phalanx::node {

class KeyframeSpammer : public Tactic {
 public:
  bool spamsKeyframes() const override { return true; }
};

}  // namespace phalanx::node
