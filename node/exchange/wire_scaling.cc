#include "node/exchange/wire_scaling.h"

namespace phalanx::node {

std::span<const float> WireScaling::wire(std::span<const float> v) {
  if (own_scale_ == 1.0f) return v;
  scaled_.resize(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) scaled_[i] = v[i] * own_scale_;
  return scaled_;
}

std::optional<float> WireScaling::scaleOf(std::uint32_t peer) const {
  const auto it = unscale_.find(peer);
  if (it == unscale_.end()) return std::nullopt;
  return it->second;
}

void WireScaling::setOwn(std::span<const float> published) {
  own_.resize(published.size());
  for (std::size_t i = 0; i < published.size(); ++i) own_[i] = published[i] / own_scale_;
}

}  // namespace phalanx::node
