// The hub's downlink in `exchange: hub` (ALGORITHMS.md §3.6): the robust aggregate G_t of the
// leaves' gradients goes back as one message to every leaf — dense (unidirectional compression)
// or compressed with error feedback kept at the hub, e_{t+1} = e_t + G_t − C(e_t + G_t)
// (bidirectional top-k) — and what the leaves decode from it is exactly what the hub applies,
// so every peer's model stays the same. Owned by the hub's node; called from its round thread.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compress/compressor.h"
#include "compress/feedback.h"
#include "node/config.h"
#include "train/checkpoint.h"

namespace phalanx::node {

class HubBroadcast {
 public:
  // Throws ConfigError naming the field.
  HubBroadcast(const BroadcastConfig& config, std::size_t dim,
               std::vector<compress::LayerShape> layers, std::uint64_t seed);

  // The message for aggregate g; update() becomes what every leaf decodes from it. On error
  // nothing changes.
  std::expected<std::vector<std::uint8_t>, std::string> encode(std::span<const float> g);
  std::span<const float> update() const { return update_; }
  // e (empty without a codec or without feedback).
  std::span<const float> error();

  // Section "hub.broadcast.*".
  void save(train::Checkpoint& c);
  void restore(const train::Checkpoint& c);

 private:
  std::size_t dim_;
  std::vector<float> update_;
  std::unique_ptr<compress::FeedbackEncoder> feedback_;  // null: dense
};

}  // namespace phalanx::node
