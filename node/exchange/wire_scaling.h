// EF21-W's scaling on the wire (ALGORITHMS.md §3.2): a peer publishes its vector times
// 1/(n·w_self) and reads peer j's replica times n·w_j, so that a rule's plain mean of the rows is
// the w-weighted mean. Inactive (the identity) in every other mode.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

namespace phalanx::node {

class WireScaling {
 public:
  WireScaling() = default;  // inactive
  // `own_scale` = 1/(n·w_self); `unscale`: n·w_j by peer j (every peer of the topology).
  WireScaling(float own_scale, std::map<std::uint32_t, float> unscale)
      : own_scale_(own_scale), unscale_(std::move(unscale)) {}

  bool active() const { return !unscale_.empty(); }
  // `v` as this peer puts it on the wire (itself when inactive; else a view of a buffer kept
  // until the next call).
  std::span<const float> wire(std::span<const float> v);
  // What a receiver multiplies peer j's replica by (none when inactive).
  std::optional<float> scaleOf(std::uint32_t peer) const;
  // This peer's published vector as its receivers read it: kept, and returned by own().
  void setOwn(std::span<const float> published);
  std::span<const float> own() const { return own_; }

 private:
  float own_scale_ = 1.0f;
  std::map<std::uint32_t, float> unscale_;
  std::vector<float> scaled_, own_;
};

}  // namespace phalanx::node
