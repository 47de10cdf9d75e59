#include "node/exchange/gradient_feedback.h"

#include <fmt/format.h>

#include "compress/decode.h"
#include "kernels/vector_ops.h"
#include "node/exchange/replicas.h"

namespace phalanx::node {

GradientFeedback::GradientFeedback(const Config& config, std::size_t dim,
                                   std::vector<compress::LayerShape> layers, std::size_t nodes,
                                   std::unique_ptr<compress::Compressor> codec)
    : dim_(dim), own_(dim, 0.0f) {
  using compress::FeedbackKind;
  const CompressionConfig& k = config.compression;
  if (k.feedback == FeedbackKind::kDgc) {
    kind_ = Kind::kDgc;
    compress::DgcConfig d{.density = k.density,
                          .momentum = config.optimizer.momentum,
                          .clip_norm = k.clip_norm,
                          .nodes = std::max<std::size_t>(nodes, 1),
                          .values = k.values,
                          .layers = std::move(layers)};
    auto made = compress::DgcEncoder::make(d);
    if (!made) throw ConfigError(made.error());
    dgc_ = std::move(*made);
    return;
  }
  momentum_.assign(dim, 0.0f);
  if (tracks(k.feedback)) {
    kind_ = Kind::kTracked;
    beta_ = k.feedback == FeedbackKind::kEf21Sgdm ? float(1.0 - k.eta)
                                                  : float(config.optimizer.momentum);
    return;
  }
  if (k.feedback != FeedbackKind::kNone && k.feedback != FeedbackKind::kEf14) {
    throw ConfigError(
        fmt::format("compression.feedback: {} is not run in gradient mode "
                    "(none, ef14, ef21, ef21_sgdm, ef21_w, diana, dgc)",
                    compress::kFeedbacks.name(k.feedback)));
  }
  kind_ = Kind::kStandalone;
  // The outer loop's pseudo-gradient goes out as it is: its momentum is the outer optimizer's.
  beta_ = config.exchange == Exchange::kOuter ? 0.0f : float(config.optimizer.momentum);
  if (codec) {
    auto made = compress::FeedbackEncoder::make(std::move(codec), {.kind = k.feedback}, dim);
    if (!made) throw ConfigError(made.error());
    feedback_ = std::move(*made);
  }
}

std::span<const float> GradientFeedback::track(std::span<const float> g) {
  kernels::axpby(1.0f - beta_, g, beta_, momentum_);  // m = beta m + (1 - beta) g
  return momentum_;
}

std::expected<std::vector<std::uint8_t>, std::string> GradientFeedback::encode(
    std::span<const float> g, std::uint64_t epoch) {
  if (g.size() != dim_)
    return std::unexpected(fmt::format("gradient of {} for a model of {}", g.size(), dim_));
  compress::Encoded q;
  if (dgc_) {
    if (auto ok = dgc_->encode(g, epoch, q); !ok) return std::unexpected(ok.error());
  } else if (feedback_) {
    if (!kernels::allFinite(g)) return std::unexpected("the gradient holds NaN or Inf");
    track(g);
    if (auto ok = feedback_->encode(momentum_, q); !ok) return std::unexpected(ok.error());
  } else {
    if (!kernels::allFinite(g)) return std::unexpected("the gradient holds NaN or Inf");
    track(g);
    q.bytes = encodeDense(momentum_);
  }
  // The pivot is what the receivers see, decoded by the same code.
  if (auto ok = compress::decode(q.bytes, own_); !ok) return std::unexpected(ok.error());
  return std::move(q.bytes);
}

void GradientFeedback::save(train::Checkpoint& c) {
  c.putFloats("gradient.own", own_);
  if (!momentum_.empty()) c.putFloats("gradient.momentum", momentum_);
  if (dgc_) {
    c.putFloats("gradient.dgc.u", dgc_->momentum());
    c.putFloats("gradient.dgc.v", dgc_->accumulated());
    const std::uint64_t calls = dgc_->calls();
    c.putU64s("gradient.dgc.calls", std::span(&calls, 1));
  }
  if (feedback_) {
    for (const auto& s : feedback_->state()) c.putFloats("gradient.feedback." + s.name, s.values);
  }
}

void GradientFeedback::restore(const train::Checkpoint& c) {
  const auto sized = [&](const std::string& name, bool may_be_empty) {
    std::vector<float> v = c.floats(name);
    if (v.size() != dim_ && !(may_be_empty && v.empty())) {
      throw train::CheckpointError(
          fmt::format("checkpoint: {} has {} values for a model of {}", name, v.size(), dim_));
    }
    return v;
  };
  own_ = sized("gradient.own", false);
  if (!momentum_.empty()) momentum_ = sized("gradient.momentum", false);
  if (dgc_) {
    const auto calls = c.u64s("gradient.dgc.calls");
    if (calls.size() != 1)
      throw train::CheckpointError("checkpoint: gradient.dgc.calls is not one number");
    dgc_->restore(sized("gradient.dgc.u", true), sized("gradient.dgc.v", true), calls[0]);
  }
  if (feedback_) {
    for (const auto& s : feedback_->state()) {
      const std::vector<float> v = sized("gradient.feedback." + s.name, false);
      std::copy(v.begin(), v.end(), s.values.begin());
    }
  }
}

}  // namespace phalanx::node
