// Gradient-exchange mode (`exchange: gradient`, ALGORITHMS.md §3.2 and §3.4): what an honest
// node makes of its local gradient g before it goes on the wire. The receivers aggregate what
// they hear robustly, with the node's own vector as the pivot, and step x -= lr_t · G.
//
//   feedback   state                                    what goes on the wire
//   dgc        DGC: u = mu·u + g, v += u, masking       GRADIENT: sampled top-k of v per layer,
//              (mu = optimizer.momentum), warm-up        dense u for small and 1-D layers
//   none, ef14 m = beta·m + (1-beta)·g (EMA momentum)   GRADIENT: C(m) (ef14: C(m + e), e kept)
//   ef21       m as above                               the node's replica of m, tracked CHOCO-
//   ef21_sgdm  u = (1-eta)·u + eta·g                    style (DELTA/KEYFRAME): q = C(u - r), r +=
//   q ef21_w     m as above                               the same on m/(n·w_i); receivers read
//   n·w_i·r diana      m as above                               q = C(m - h) (C unbiased),
//   receivers read
//                                                       h + q, both sides h += alpha·q
//
// GRADIENT messages stand alone (a receiver decodes each into a dense vector); the tracked
// kinds publish their vector through the node's PublicReplica exactly like a model in
// gossip, so keyframes, sequence gaps and resyncs work the same. Owned by one node; called
// from its round thread only.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compress/compressor.h"
#include "compress/dgc.h"
#include "compress/feedback.h"
#include "node/config.h"
#include "train/checkpoint.h"

namespace phalanx::node {

class GradientFeedback {
 public:
  enum class Kind { kDgc, kStandalone, kTracked };

  // `codec`: the node's compressor (null for codec none); dgc ignores it and selects itself.
  // `nodes`: n, for DGC's clipping. Throws ConfigError naming the field.
  GradientFeedback(const Config& config, std::size_t dim, std::vector<compress::LayerShape> layers,
                   std::size_t nodes, std::unique_ptr<compress::Compressor> codec);

  // Whether `feedback` sends through the node's replica (ef21, ef21_sgdm, ef21_w, diana)
  // rather than standalone GRADIENT messages: the node gives such an exchange no codec of its
  // own.
  static bool tracks(compress::FeedbackKind feedback) {
    using compress::FeedbackKind;
    return feedback == FeedbackKind::kEf21 || feedback == FeedbackKind::kEf21Sgdm ||
           feedback == FeedbackKind::kEf21W || feedback == FeedbackKind::kDiana;
  }

  Kind kind() const { return kind_; }
  bool tracked() const { return kind_ == Kind::kTracked; }

  // Standalone kinds (dgc, none, ef14): the round's GRADIENT message for gradient g at
  // `epoch`; own() becomes what receivers decode from it. On error the state is unchanged
  // except DGC's, which has already accumulated g.
  std::expected<std::vector<std::uint8_t>, std::string> encode(std::span<const float> g,
                                                               std::uint64_t epoch);
  std::span<const float> own() const { return own_; }

  // Tracked kinds: folds g into the momentum; returns the vector to publish (before ef21_w's
  // scaling, which the node applies).
  std::span<const float> track(std::span<const float> g);

  // Sections "gradient.*".
  void save(train::Checkpoint& c);
  void restore(const train::Checkpoint& c);

 private:
  Kind kind_ = Kind::kStandalone;
  std::size_t dim_;
  float beta_ = 0;  // weight of the old momentum: optimizer.momentum, or 1 - eta for ef21_sgdm
  std::vector<float> momentum_;  // m or u (not dgc)
  std::vector<float> own_;
  std::unique_ptr<compress::DgcEncoder> dgc_;
  std::unique_ptr<compress::FeedbackEncoder> feedback_;  // standalone with a codec
};

}  // namespace phalanx::node
