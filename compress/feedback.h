// Error feedback around any compressor (ALGORITHMS.md §3.2): the sender side that turns a
// stream of vectors v into messages, and the receiver side that turns those messages back
// into its estimate of v. EF21's tracked replica is also what compressed model gossip keeps
// per neighbour (§3.3). Both sides are owned by one stream and called from one thread.
//
//   none       send C(v)                         receiver: decode
//   ef14       p = v + e; q = C(p); e = p - q    receiver: decode
//   ef21       q = C(v - r); r += q              receiver: r += q, estimate r
//   ef21_sgdm  u = (1-eta)u + eta v; q = C(u - r); r += q     receiver as ef21
//   ef21_w     q = C(v/(n w) - r); r += q        receiver: r += q, estimate n·w·r
//   diana      q = C(v - h), C unbiased          receiver: estimate h + q; both: h += alpha q
#pragma once

#include <cstddef>
#include <expected>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/names.h"
#include "compress/compressor.h"

namespace phalanx::compress {

enum class FeedbackKind : std::uint8_t {
  kNone,
  kEf14,
  kEf21,
  kEf21Sgdm,
  kEf21W,
  kDiana,
  kDgc,  // DGC's momentum correction and local accumulation (compress/dgc.h), not a wrapper
};
inline constexpr auto kFeedbacks =
    base::nameTable<FeedbackKind>({{FeedbackKind::kNone, "none"},
                                   {FeedbackKind::kEf14, "ef14"},
                                   {FeedbackKind::kEf21, "ef21"},
                                   {FeedbackKind::kEf21Sgdm, "ef21_sgdm"},
                                   {FeedbackKind::kEf21W, "ef21_w"},
                                   {FeedbackKind::kDiana, "diana"},
                                   {FeedbackKind::kDgc, "dgc"}});

struct FeedbackConfig {
  FeedbackKind kind = FeedbackKind::kNone;
  double eta = 0.1;       // ef21_sgdm's momentum weight
  double weight = 0;      // ef21_w: this sender's w_i = L_i / Σ L_j; 0 = uniform (1/peers)
  std::size_t peers = 1;  // ef21_w: n
  double alpha = 0;       // diana's shift step; 0 = 1/(ω + 1) from the compressor
};

// A named state vector, for checkpoints: restore by writing into the span.
struct StateVector {
  std::string name;
  std::span<float> values;
};

class FeedbackEncoder {
 public:
  // Errors: dgc (DgcEncoder runs it), diana around a biased compressor, eta outside (0, 1], weight
  // < 0.
  static std::expected<std::unique_ptr<FeedbackEncoder>, std::string> make(
      std::unique_ptr<Compressor> compressor, const FeedbackConfig& config, std::size_t dim);

  // Encodes the next vector v (length dim) and updates the state exactly as the receiver
  // will (by decoding the message it just wrote).
  std::expected<void, std::string> encode(std::span<const float> v, Encoded& out);

  Compressor& compressor() { return *compressor_; }
  double alpha() const { return alpha_; }
  // e (ef14), r (ef21*), u and r (ef21_sgdm), h (diana); empty for none.
  std::vector<StateVector> state();
  // Forget everything (a keyframe resets both sides).
  void reset();

 private:
  FeedbackEncoder() = default;
  std::unique_ptr<Compressor> compressor_;
  FeedbackConfig config_;
  FeedbackKind kind_ = FeedbackKind::kNone;
  float scale_ = 1;   // ef21_w: 1/(n w)
  double alpha_ = 1;  // diana
  std::vector<float> error_, replica_, momentum_, scratch_;
};

class FeedbackDecoder {
 public:
  // `alpha` must be the sender's (FeedbackEncoder::alpha()) for diana.
  static std::expected<std::unique_ptr<FeedbackDecoder>, std::string> make(
      const FeedbackConfig& config, std::size_t dim, double alpha);

  // Applies one message; on error (message rejected) nothing changes.
  std::expected<void, std::string> receive(std::span<const std::uint8_t> message);

  // The receiver's estimate of the sender's current v.
  std::span<const float> estimate() const { return estimate_; }
  std::vector<StateVector> state();
  void reset();

 private:
  FeedbackDecoder() = default;
  FeedbackKind kind_ = FeedbackKind::kNone;
  float unscale_ = 1;  // ef21_w: n w
  float alpha_ = 1;
  std::vector<float> replica_, estimate_, scratch_;
};

}  // namespace phalanx::compress
