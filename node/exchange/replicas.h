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
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compress/compressor.h"
#include "net/received.h"

namespace phalanx::node {

using PeerId = std::uint32_t;

// `values` as an uncompressed (fp32, codec none) message: keyframes, and what an attacker sends
// (non-finite values included: receivers refuse them when they decode).
std::vector<std::uint8_t> encodeDense(std::span<const float> values);

// ŷ_i lives in its own keyframe: a dense message whose values are the replica, handed to the
// wire as it is and copied only when a holder (a receiver's replica, the digest memo) still has
// it when ŷ_i moves.
class PublicReplica {
 public:
  explicit PublicReplica(std::size_t dim);

  // q = C(y - ŷ); published() = ŷ + decode(q), then ŷ += shift·decode(q). Returns q's bytes;
  // on a codec error nothing changes.
  std::expected<std::vector<std::uint8_t>, std::string> encodeDelta(std::span<const float> y,
                                                                    compress::Compressor& codec,
                                                                    float shift = 1.0f);

  // The full replica as an uncompressed message (for keyframes): shared, never written again.
  net::Payload keyframe() const { return frame_; }

  std::span<const float> values() const;
  // What the receivers of the last delta hold as this node's vector (values() after a full
  // step, a keyframe or a reset).
  std::span<const float> published() const { return shifted_ ? published_ : values(); }
  // What keeps published() alive for a holder that outlives this round (null after a partial
  // step: then it is this object's own).
  net::Payload publishedOwner() const { return shifted_ ? nullptr : frame_; }
  // Starting point (and after a checkpoint restore).
  void reset(std::span<const float> values);
  // How much of the last delta the codec carried: 1 − ‖y − published()‖² / ‖y − ŷ‖², the
  // contraction δ of CHOCO's analysis measured on this vector (1: exact; top-k of a flat
  // vector: k/d). NaN before any delta, or when y equalled ŷ.
  double contraction() const { return contraction_; }
  // ‖y − ŷ‖ before the last delta: what the replica lagged behind the vector (NaN before any).
  double residual() const { return residual_; }

 private:
  // ŷ_i's values, in place (a copy first when anyone else holds the frame).
  std::span<float> writable();
  // Whether this object holds `frame` alone (then it may write it).
  static bool alone(const std::shared_ptr<std::vector<std::uint8_t>>& frame);
  // frame_ is held elsewhere: the spare (the frame before, once its holders let it go; given
  // frame_'s values when `keep_values`) or a copy of frame_ takes its place; the old frame
  // becomes the spare. Two frames take turns for the life of the replica: no model-sized
  // allocation per round once receivers keep up.
  void moveToSpare(bool keep_values);

  std::size_t dim_;
  std::shared_ptr<std::vector<std::uint8_t>> frame_;  // encodeDense(ŷ_i)
  std::shared_ptr<std::vector<std::uint8_t>> spare_;  // the frame before
  std::vector<float> difference_;                     // y - ŷ, reused
  std::vector<float> published_;                      // ŷ + q after a partial step
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
  // A keyframe's values are read in its buffer, which the replica keeps (no copy: in simulation
  // every receiver of a sender's keyframe shares it) until a delta needs values of its own.
  // `checks`: what other receivers of the same buffer checked of it (null: none share it).
  Result applyKeyframe(PeerId peer, std::uint64_t sequence, const net::Payload& payload,
                       net::PayloadChecks* checks = nullptr);

  bool valid(PeerId peer) const;
  // The sender's vector as of its last message (ŷ + q after a partial step); empty when unknown.
  std::span<const float> replica(PeerId peer) const;
  std::uint64_t lastSequence(PeerId peer) const;  // 0 when unknown
  void invalidate(PeerId peer);                   // reconnection: wait for the next keyframe

 private:
  struct Entry {
    net::Payload frame;                   // the last keyframe, when `values` are read there
    std::span<const float> frame_values;  // into `frame`
    std::vector<float> values;            // otherwise (empty until a delta needs them)
    std::vector<float> published;         // values before the last partial step + its q
    std::uint64_t last_sequence = 0;
    bool valid = false, shifted = false;
  };
  // `e`'s values in a vector of its own (for a delta to add to).
  std::vector<float>& ownValues(Entry& e);

  std::size_t dim_;
  std::map<PeerId, Entry> entries_;
};

}  // namespace phalanx::node
