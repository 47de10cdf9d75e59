// CHOCO replica tracking (ALGORITHMS.md §3.3). The sender keeps its public replica ŷ_i and sends
// q = C(y - ŷ_i), adding the decoded q to ŷ_i exactly as receivers do; a receiver keeps ŷ_j per
// neighbour, applies deltas only in sequence order, and trusts a replica only from a keyframe
// (the sender's full ŷ_i in fp32, so both sides stay bit-identical) through an unbroken chain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "compress/compressor.h"

namespace phalanx::node {

using PeerId = std::uint32_t;

// `values` as an uncompressed (fp32, codec none) message: keyframes, and what an attacker sends
// (non-finite values included: receivers refuse them when they decode).
std::vector<std::uint8_t> encodeDense(std::span<const float> values);

class PublicReplica {
 public:
  explicit PublicReplica(std::size_t dim) : replica_(dim, 0.0f) {}

  // q = C(y - ŷ), then ŷ += decode(q). Returns q's bytes; on a codec error ŷ is unchanged.
  std::expected<std::vector<std::uint8_t>, std::string> encodeDelta(std::span<const float> y,
                                                                    compress::Compressor& codec);

  // The full replica as an uncompressed message (for keyframes).
  std::vector<std::uint8_t> keyframe() const;

  std::span<const float> values() const { return replica_; }
  // Starting point (and after a checkpoint restore).
  void reset(std::span<const float> values);

 private:
  std::vector<float> replica_;
  std::vector<float> difference_;  // y - ŷ, reused
};

class ReplicaTable {
 public:
  enum class Outcome {
    kApplied,  // the replica took the message and is valid
    kStale,    // an old or repeated sequence: ignored
    kGap,      // a sequence was skipped (or no keyframe yet): replica invalid, ask for one
    kInvalid,  // the payload did not decode: counted, replica invalidated
  };
  struct Result {
    Outcome outcome;
    std::string error;  // for kInvalid
  };

  explicit ReplicaTable(std::size_t dim) : dim_(dim) {}

  Result applyDelta(PeerId peer, std::uint64_t sequence, std::span<const std::uint8_t> payload);
  Result applyKeyframe(PeerId peer, std::uint64_t sequence, std::span<const std::uint8_t> payload);

  bool valid(PeerId peer) const;
  std::span<const float> replica(PeerId peer) const;  // empty when unknown
  std::uint64_t lastSequence(PeerId peer) const;      // 0 when unknown
  void invalidate(PeerId peer);                       // reconnection: wait for the next keyframe

 private:
  struct Entry {
    std::vector<float> values;
    std::uint64_t last_sequence = 0;
    bool valid = false;
  };
  Entry& entry(PeerId peer);

  std::size_t dim_;
  std::map<PeerId, Entry> entries_;
};

}  // namespace phalanx::node
