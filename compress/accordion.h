// Accordion (Agarwal et al. MLSys 2021; ALGORITHMS.md §3.5): per layer, a local decision to
// compress little (LOW, critical regime) or much (HIGH) from how fast the accumulated
// gradient's norm changes, and the compressor that applies those levels layer by layer.
// Both are owned by one node and called from its round thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "compress/compressor.h"

namespace phalanx::compress {

enum class Level : std::uint8_t { kLow = 0, kHigh = 1 };  // kLow: less compression

struct AccordionConfig {
  double eta = 0.5;                // ratio at or above which a layer is in a critical regime
  std::uint64_t switch_every = 1;  // windows between decisions
};

class AccordionController {
 public:
  AccordionController(std::size_t layers, AccordionConfig config);

  // A_l += g for layer l over the current window (g: that layer's uncompressed gradient).
  void accumulate(std::size_t layer, std::span<const float> gradient);

  // Ends a window. Every switch_every windows each layer is decided: LOW when it is the
  // first decision, the learning rate dropped, or |‖A_old‖ - ‖A_new‖| / ‖A_old‖ >= eta
  // (9 when ‖A_old‖ = 0); HIGH otherwise. Returns the levels in force.
  std::span<const Level> endWindow(bool learning_rate_dropped);

  std::span<const Level> levels() const { return levels_; }
  // The ratio behind each layer's last decision (for logs and tests).
  std::span<const double> ratios() const { return ratios_; }

 private:
  AccordionConfig config_;
  std::vector<std::vector<double>> sums_;  // A_l for the open window
  std::vector<double> previous_norms_;     // ‖A_l‖ at the last decision; < 0 before the first
  std::vector<Level> levels_;
  std::vector<double> ratios_;
  std::uint64_t windows_ = 0;
};

// The LOW and HIGH settings for a codec: topk/topk_sampled/randk density ↔ density/10,
// qsgd bits ↔ bits/2 (at least 2), powersgd rank ↔ rank/2 (at least 1). Error otherwise.
std::expected<std::pair<CompressorConfig, CompressorConfig>, std::string> accordionLevels(
    const CompressorConfig& base);

// Compresses each layer with its level's compressor into one layered message. Each layer
// keeps both compressors, so random streams and powersgd warm starts survive switches.
// Error-feedback state lives in the wrapper around it and is untouched by a switch.
class AdaptiveCompressor final : public Compressor {
 public:
  static std::expected<std::unique_ptr<AdaptiveCompressor>, std::string> make(
      const CompressorConfig& low, const CompressorConfig& high);

  void setLevels(std::span<const Level> levels);
  std::span<const Level> levelsInUse() const { return levels_; }

  std::expected<void, std::string> encode(std::span<const float> x, Encoded& out) override;
  std::string_view name() const override { return "adaptive"; }

 private:
  AdaptiveCompressor() = default;
  std::vector<LayerShape> layers_;
  std::vector<std::unique_ptr<Compressor>> low_, high_;
  std::vector<Level> levels_;
  std::size_t total_ = 0;
  Encoded segment_;
};

}  // namespace phalanx::compress
