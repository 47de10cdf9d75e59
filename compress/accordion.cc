#include "compress/accordion.h"

#include <fmt/format.h>

#include <cmath>

#include "base/check.h"
#include "compress/formats.h"
#include "kernels/counter_rng.h"

namespace phalanx::compress {

AccordionController::AccordionController(std::size_t layers, AccordionConfig config)
    : config_(config),
      sums_(layers),
      previous_norms_(layers, -1.0),
      levels_(layers, Level::kLow),
      ratios_(layers, 9.0) {
  PHALANX_CHECK(config.switch_every >= 1, "Accordion: switch_every must be >= 1");
}

void AccordionController::accumulate(std::size_t layer, std::span<const float> gradient) {
  PHALANX_CHECK(layer < sums_.size(), "Accordion: layer out of range");
  auto& sum = sums_[layer];
  if (sum.empty()) sum.assign(gradient.size(), 0.0);
  PHALANX_CHECK(sum.size() == gradient.size(), "Accordion: a layer changed size");
  for (std::size_t j = 0; j < gradient.size(); ++j) sum[j] += gradient[j];
}

std::span<const Level> AccordionController::endWindow(bool learning_rate_dropped) {
  ++windows_;
  const bool decide = (windows_ - 1) % config_.switch_every == 0;
  for (std::size_t l = 0; l < sums_.size(); ++l) {
    double sq = 0;
    for (const double v : sums_[l]) sq += v * v;
    std::fill(sums_[l].begin(), sums_[l].end(), 0.0);
    if (!decide) continue;
    const double norm = std::sqrt(sq);
    const double old = previous_norms_[l];
    ratios_[l] = old <= 0 ? 9.0 : std::abs(old - norm) / old;
    const bool critical = old < 0 || learning_rate_dropped || ratios_[l] >= config_.eta;
    levels_[l] = critical ? Level::kLow : Level::kHigh;
    previous_norms_[l] = norm;
  }
  return levels_;
}

std::expected<std::pair<CompressorConfig, CompressorConfig>, std::string> accordionLevels(
    const CompressorConfig& base) {
  CompressorConfig high = base;
  const CodecInfo* codec = codecInfo(base.codec);
  if (codec && codec->by_density) {
    high.density = base.density / 10;
  } else if (base.codec == CodecId::kQsgd) {
    high.bits = std::max(2, base.bits / 2);
  } else if (base.codec == CodecId::kPowersgd) {
    high.rank = std::max(1, base.rank / 2);
  } else {
    return std::unexpected(fmt::format(
        "compression.adaptive: Accordion has no levels for '{}' (use topk, topk_sampled, "
        "randk, qsgd or powersgd)",
        codecName(base.codec)));
  }
  return std::pair{base, high};
}

std::expected<std::unique_ptr<AdaptiveCompressor>, std::string> AdaptiveCompressor::make(
    const CompressorConfig& low, const CompressorConfig& high) {
  if (low.layers.empty())
    return std::unexpected("compression.adaptive: needs the model's layer shapes");
  std::unique_ptr<AdaptiveCompressor> a(new AdaptiveCompressor());
  a->layers_ = low.layers;
  const kernels::CounterRng seeds{low.seed};
  for (std::size_t l = 0; l < a->layers_.size(); ++l) {
    const LayerShape shape = a->layers_[l];
    for (auto [config, into] : {std::pair{&low, &a->low_}, std::pair{&high, &a->high_}}) {
      CompressorConfig c = *config;
      c.layers = {shape};
      c.seed = seeds.bits(2 * l + (into == &a->high_ ? 1 : 0));
      auto made = makeCompressor(c);
      if (!made) return std::unexpected(made.error());
      into->push_back(std::move(*made));
    }
    a->total_ += shape.size();
  }
  a->levels_.assign(a->layers_.size(), Level::kLow);
  return a;
}

void AdaptiveCompressor::setLevels(std::span<const Level> levels) {
  PHALANX_CHECK(levels.size() == levels_.size(), "AdaptiveCompressor: one level per layer");
  levels_.assign(levels.begin(), levels.end());
}

std::expected<void, std::string> AdaptiveCompressor::encode(std::span<const float> x,
                                                            Encoded& out) {
  if (x.size() != total_) {
    return std::unexpected(
        fmt::format("adaptive: input has {} entries, the layers {}", x.size(), total_));
  }
  out.bytes.clear();
  ByteWriter w(out.bytes);
  detail::beginLayered(w, std::uint32_t(total_), layers_.size());
  std::size_t offset = 0;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    Compressor& c = levels_[l] == Level::kLow ? *low_[l] : *high_[l];
    if (auto ok = c.encode(x.subspan(offset, layers_[l].size()), segment_); !ok) {
      return std::unexpected(fmt::format("layer {}: {}", l, ok.error()));
    }
    detail::appendSegment(w, segment_.bytes);
    offset += layers_[l].size();
  }
  return {};
}

}  // namespace phalanx::compress
