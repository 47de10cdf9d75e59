// Compressors (ALGORITHMS.md §3.1) behind one interface, chosen by name. Pure: no I/O, no
// clocks; deterministic given the seed and the sequence of calls. A Compressor is owned by
// one stream (one sender) and called from one thread: randk, qsgd, terngrad and natural
// draw fresh randomness per call and powersgd warm-starts from its previous call.
// Decoding needs no compressor: see compress/decode.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compress/encoded.h"

namespace phalanx::compress {

// The configurable codecs' names (compress/encoded.h's registry), in wire-id order.
inline const std::vector<std::string> kCodecNames = [] {
  std::vector<std::string> names;
  for (const CodecInfo& c : kCodecs) {
    if (c.configurable) names.emplace_back(c.name);
  }
  return names;
}();

// One tensor of the model inside the flat parameter vector: a matrix of rows × cols stored
// row-major, or a vector when cols == 1 (biases). Layers tile the vector in order.
struct LayerShape {
  std::size_t rows = 0;
  std::size_t cols = 1;
  std::size_t size() const { return rows * cols; }
  bool isMatrix() const { return rows > 1 && cols > 1; }
};

struct CompressorConfig {
  CodecId codec = CodecId::kNone;
  double density = 0.01;  // topk, topk_sampled, randk: k = clamp(round(density·d), 1, d)
  ValueType values = ValueType::kFp32;  // sparse values on the wire (kValueTypes)
  int bits = 8;                    // qsgd: bits per entry with the sign; s = 2^(bits-1) - 1 levels
  std::size_t bucket = 0;          // qsgd, sign; 0: the codec's default (qsgd 128, sign 1024)
  int rank = 2;                    // powersgd
  double threshold = 0;            // threshold: lambda; 0 picks 1/(2·sqrt(k))
  bool unbiased = true;            // randk (scale d/k), qsgd (no variance-reducing shrink)
  std::uint64_t seed = 1;          // see compressionSeed()
  std::vector<LayerShape> layers;  // the model's layout; empty = one vector (powersgd needs it)
};

// Per-node randomness by default (what lets unbiased compression pay off); one stream for
// every node when `shared`.
std::uint64_t compressionSeed(std::uint64_t seed, std::uint64_t node_id, bool shared);

class Compressor {
 public:
  virtual ~Compressor() = default;

  // Replaces out.bytes with C(x). Errors: a value the codec would send is NaN or Inf (or a
  // norm/scale built from them), or x's length does not match the configured layers.
  virtual std::expected<void, std::string> encode(std::span<const float> x, Encoded& out) = 0;

  virtual std::string_view name() const = 0;

  // ω with E[C(x)] = x and E‖C(x) - x‖² <= ω‖x‖² at length d, for unbiased codecs (DIANA's
  // step is 1/(ω + 1)); nullopt for biased ones.
  virtual std::optional<double> varianceFactor(std::size_t d) const {
    (void)d;
    return std::nullopt;
  }
};

// Errors name the field: unknown codec, density outside (0, 1], bits outside 2..16 for
// qsgd, rank < 1, bucket >= 2^32, unknown value type, powersgd without layer shapes.
std::expected<std::unique_ptr<Compressor>, std::string> makeCompressor(const CompressorConfig& c);

// k for a density at length d (what topk/randk send; the target of topk_sampled).
std::size_t keptCount(double density, std::size_t d);

}  // namespace phalanx::compress
