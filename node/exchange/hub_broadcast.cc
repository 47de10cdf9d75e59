#include "node/exchange/hub_broadcast.h"

#include <fmt/format.h>

#include "compress/decode.h"
#include "kernels/vector_ops.h"
#include "node/exchange/replicas.h"

namespace phalanx::node {

HubBroadcast::HubBroadcast(const BroadcastConfig& config, std::size_t dim,
                           std::vector<compress::LayerShape> layers, std::uint64_t seed)
    : dim_(dim), update_(dim, 0.0f) {
  if (config.codec == compress::CodecId::kNone) return;
  compress::CompressorConfig c = compressorConfig(config);
  c.seed = seed;
  c.layers = std::move(layers);
  auto codec = compress::makeCompressor(c);
  if (!codec) throw ConfigError("compression.broadcast: " + codec.error());
  auto made = compress::FeedbackEncoder::make(std::move(*codec), {.kind = config.feedback}, dim);
  if (!made) throw ConfigError("compression.broadcast: " + made.error());
  feedback_ = std::move(*made);
}

std::expected<std::vector<std::uint8_t>, std::string> HubBroadcast::encode(
    std::span<const float> g) {
  if (g.size() != dim_)
    return std::unexpected(fmt::format("aggregate of {} for a model of {}", g.size(), dim_));
  if (!kernels::allFinite(g)) return std::unexpected("the aggregate holds NaN or Inf");
  compress::Encoded q;
  if (feedback_) {
    if (auto ok = feedback_->encode(g, q); !ok) return std::unexpected(ok.error());
  } else {
    q.bytes = encodeDense(g);
  }
  // The update is what the leaves see, decoded by the same code.
  if (auto ok = compress::decode(q.bytes, update_); !ok) return std::unexpected(ok.error());
  return std::move(q.bytes);
}

std::span<const float> HubBroadcast::error() {
  if (!feedback_) return {};
  for (const auto& s : feedback_->state()) {
    if (s.name == "error") return s.values;
  }
  return {};
}

void HubBroadcast::save(train::Checkpoint& c) {
  c.putFloats("hub.broadcast.update", update_);
  if (feedback_) {
    for (const auto& s : feedback_->state()) c.putFloats("hub.broadcast." + s.name, s.values);
  }
}

void HubBroadcast::restore(const train::Checkpoint& c) {
  const auto sized = [&](const std::string& name) {
    std::vector<float> v = c.floats(name);
    if (v.size() != dim_) {
      throw train::CheckpointError(
          fmt::format("checkpoint: {} has {} values for a model of {}", name, v.size(), dim_));
    }
    return v;
  };
  update_ = sized("hub.broadcast.update");
  if (feedback_) {
    for (const auto& s : feedback_->state()) {
      const std::vector<float> v = sized("hub.broadcast." + s.name);
      std::copy(v.begin(), v.end(), s.values.begin());
    }
  }
}

}  // namespace phalanx::node
