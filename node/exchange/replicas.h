// CHOCO replica tracking (ALGORITHMS.md §3.3). The sender keeps its public replica ŷ_i and sends
// q = C(y - ŷ_i), adding the decoded q to ŷ_i exactly as receivers do; a receiver keeps ŷ_j per
// neighbour, applies deltas only in sequence order, and trusts a replica only from a keyframe
// (the sender's full ŷ_i in fp32, so both sides stay bit-identical) through an unbroken chain.
// A delta may move the replica by only a step s of q (DIANA's shift, ALGORITHMS.md §3.2:
// h += α·q): the vector it stands for that round is then ŷ + q, and ŷ becomes ŷ + s·q; s = 1
// (every other use) makes the two the same.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
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

  // q = C(y - ŷ); published() = ŷ + decode(q), then ŷ += shift·decode(q). Returns q's bytes;
  // on a codec error nothing changes.
  std::expected<std::vector<std::uint8_t>, std::string> encodeDelta(std::span<const float> y,
                                                                    compress::Compressor& codec,
                                                                    float shift = 1.0f);

  // The full replica as an uncompressed message (for keyframes).
  std::vector<std::uint8_t> keyframe() const;

  std::span<const float> values() const { return replica_; }
  // What the receivers of the last delta hold as this node's vector (values() after a full
  // step, a keyframe or a reset).
  std::span<const float> published() const { return shifted_ ? published_ : replica_; }
  // Starting point (and after a checkpoint restore).
  void reset(std::span<const float> values);
  // How much of the last delta the codec carried: 1 − ‖y − published()‖² / ‖y − ŷ‖², the
  // contraction δ of CHOCO's analysis measured on this vector (1: exact; top-k of a flat
  // vector: k/d). NaN before any delta, or when y equalled ŷ.
  double contraction() const { return contraction_; }
  // ‖y − ŷ‖ before the last delta: what the replica lagged behind the vector (NaN before any).
  double residual() const { return residual_; }

 private:
  std::vector<float> replica_;
  std::vector<float> difference_;  // y - ŷ, reused
  std::vector<float> published_;   // ŷ + q after a partial step
  bool shifted_ = false;
  double contraction_ = std::numeric_limits<double>::quiet_NaN();
  double residual_ = std::numeric_limits<double>::quiet_NaN();
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

  // `shift`: the step the sender's ŷ took (finite, in (0, 1]; kInvalid otherwise).
  Result applyDelta(PeerId peer, std::uint64_t sequence, std::span<const std::uint8_t> payload,
                    float shift = 1.0f);
  Result applyKeyframe(PeerId peer, std::uint64_t sequence, std::span<const std::uint8_t> payload);

  bool valid(PeerId peer) const;
  // The sender's vector as of its last message (ŷ + q after a partial step); empty when unknown.
  std::span<const float> replica(PeerId peer) const;
  std::uint64_t lastSequence(PeerId peer) const;  // 0 when unknown
  void invalidate(PeerId peer);                   // reconnection: wait for the next keyframe

 private:
  struct Entry {
    std::vector<float> values;
    std::vector<float> published;  // values before the last partial step + its q
    std::uint64_t last_sequence = 0;
    bool valid = false, shifted = false;
  };
  Entry& entry(PeerId peer);

  std::size_t dim_;
  std::map<PeerId, Entry> entries_;
};

}  // namespace phalanx::node
