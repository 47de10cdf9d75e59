// Deep Gradient Compression's gradient codec (Lin et al. ICLR 2018; ALGORITHMS.md §3.4):
// local clipping, momentum correction, per-layer sampled top-k with density warm-up,
// momentum factor masking, and dense small and 1-D tensors. Sends layered messages that
// compress/decode.h reads. Owned by one node, called from its round thread.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compress/compressor.h"

namespace phalanx::compress {

struct DgcConfig {
  double density = 0.001;  // the target, reached after the warm-up
  double momentum = 0.9;   // mu
  double clip_norm = 0;    // 0: no local clipping; else ‖g‖ <= clip_norm / sqrt(nodes)
  std::size_t nodes = 1;   // N
  // Densities for epochs 0, 1, ... before the target (the paper's exponential warm-up).
  std::vector<double> warmup{0.25, 0.0625, 0.015625, 0.00390625};
  ValueType values = ValueType::kFp32;
  std::uint64_t seed = 1;
  std::vector<LayerShape> layers;  // empty: one vector
};

class DgcEncoder {
 public:
  static std::expected<std::unique_ptr<DgcEncoder>, std::string> make(const DgcConfig& config);

  // The density in force during `epoch` (never below the target).
  double densityAt(std::uint64_t epoch) const;

  // One step on local gradient g: clip, u = mu·u + g, v += u; per layer, a sparse layer sends
  // about density·size entries of v and zeroes u and v there (masking); a dense layer
  // (1-D, or fewer than 2/density entries) sends its momentum u, keeping plain momentum SGD
  // for it. Receivers decode and aggregate; they apply no further momentum.
  std::expected<void, std::string> encode(std::span<const float> g, std::uint64_t epoch,
                                          Encoded& out);

  // u and v (empty before the first encode) and the call count that seeds the sampling: the
  // state a checkpoint keeps, and its restore.
  std::span<float> momentum() { return u_; }
  std::span<float> accumulated() { return v_; }
  std::uint64_t calls() const { return calls_; }
  void restore(std::span<const float> u, std::span<const float> v, std::uint64_t calls) {
    u_.assign(u.begin(), u.end());
    v_.assign(v.begin(), v.end());
    calls_ = calls;
  }

 private:
  DgcEncoder() = default;
  DgcConfig config_;
  ValueType type_ = ValueType::kFp32;
  std::vector<float> u_, v_;
  std::vector<std::uint32_t> indices_;
  std::vector<std::uint8_t> segment_;
  std::uint64_t calls_ = 0;
};

}  // namespace phalanx::compress
