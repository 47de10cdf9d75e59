#include "compress/dgc.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "compress/formats.h"
#include "kernels/counter_rng.h"
#include "kernels/vector_ops.h"

namespace phalanx::compress {

std::expected<std::unique_ptr<DgcEncoder>, std::string> DgcEncoder::make(const DgcConfig& c) {
  if (!(c.density > 0 && c.density <= 1))
    return std::unexpected("compression.density: must be in (0, 1]");
  if (!(c.momentum >= 0 && c.momentum < 1))
    return std::unexpected("compression.momentum: must be in [0, 1)");
  if (!(c.clip_norm >= 0)) return std::unexpected("compression.clip_norm: must be >= 0");
  if (c.nodes < 1) return std::unexpected("compression.nodes: must be >= 1");
  for (const double w : c.warmup) {
    if (!(w > 0 && w <= 1))
      return std::unexpected("compression.warmup: densities must be in (0, 1]");
  }
  if (!kValueTypes.contains(c.values))
    return std::unexpected(
        fmt::format("compression.values: one of {}", fmt::join(kValueTypes.names(), ", ")));
  std::unique_ptr<DgcEncoder> e(new DgcEncoder());
  e->config_ = c;
  e->type_ = c.values;
  return e;
}

double DgcEncoder::densityAt(std::uint64_t epoch) const {
  if (epoch < config_.warmup.size()) return std::max(config_.warmup[epoch], config_.density);
  return config_.density;
}

std::expected<void, std::string> DgcEncoder::encode(std::span<const float> g, std::uint64_t epoch,
                                                    Encoded& out) {
  const std::vector<LayerShape> whole{LayerShape{g.size(), 1}};  // no layout: one tensor
  const std::vector<LayerShape>& layers = config_.layers.empty() ? whole : config_.layers;
  std::size_t total = 0;
  for (const auto& l : layers) total += l.size();
  if (total != g.size()) {
    return std::unexpected(
        fmt::format("dgc: gradient has {} entries, the layers {}", g.size(), total));
  }
  if (!kernels::allFinite(g)) return std::unexpected("dgc: the gradient holds NaN or Inf");
  if (u_.size() != g.size()) {
    u_.assign(g.size(), 0.0f);
    v_.assign(g.size(), 0.0f);
  }
  // Local clipping before accumulation, ‖g‖ <= clip_norm / sqrt(N), folded into the
  // momentum update as a factor on g.
  float clip = 1.0f;
  if (config_.clip_norm > 0) {
    const double limit = config_.clip_norm / std::sqrt(double(config_.nodes));
    const double norm = std::sqrt(kernels::squaredNorm(g));
    if (norm > limit) clip = float(limit / norm);
  }
  kernels::axpby(clip, g, float(config_.momentum), u_);  // u = mu u + g   (momentum correction)
  kernels::axpy(1.0f, u_, v_);                           // v = v + u

  const double density = densityAt(epoch);
  const kernels::CounterRng rng = kernels::CounterRng{config_.seed}.fork(calls_++);
  out.bytes.clear();
  ByteWriter w(out.bytes);
  detail::beginLayered(w, std::uint32_t(g.size()), layers.size());
  std::size_t offset = 0;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const std::size_t n = layers[l].size();
    const std::span<float> u = std::span(u_).subspan(offset, n);
    const std::span<float> v = std::span(v_).subspan(offset, n);
    // 1-D tensors of a known layout (biases) and small ones go dense; an unlabelled vector
    // (no layout given) counts as one tensor.
    const bool one_d = !config_.layers.empty() && layers[l].cols == 1;
    const bool dense = one_d || double(n) < 2.0 / density;
    if (dense) {
      // Plain momentum SGD for this tensor: send u; v is not used for it.
      std::fill(v.begin(), v.end(), 0.0f);
      segment_.clear();
      ByteWriter s(segment_);
      detail::writeHeader(s, CodecId::kNone, std::uint32_t(n));
      for (const float x : u) s.f32(x);
    } else {
      detail::sampledTopk(v, keptCount(density, n), rng.fork(l), indices_);
      auto ok = detail::encodeSparse(CodecId::kTopkSampled, v, indices_, type_, segment_);
      if (!ok) return std::unexpected(fmt::format("dgc: layer {}: {}", l, ok.error()));
      for (const std::uint32_t j : indices_) {  // momentum factor masking
        u[j] = 0.0f;
        v[j] = 0.0f;
      }
    }
    detail::appendSegment(w, segment_);
    offset += n;
  }
  return {};
}

}  // namespace phalanx::compress
