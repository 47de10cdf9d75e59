#include "compress/feedback.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/check.h"
#include "compress/decode.h"
#include "kernels/vector_ops.h"

namespace phalanx::compress {
namespace {

std::expected<float, std::string> ef21wScale(const FeedbackConfig& c) {
  if (c.peers < 1) return std::unexpected("compression.peers: must be >= 1");
  const double w = c.weight == 0 ? 1.0 / double(c.peers) : c.weight;
  if (!(w > 0 && w <= 1)) return std::unexpected("compression.weight: must be in (0, 1]");
  return float(1.0 / (double(c.peers) * w));
}

// The kinds a FeedbackEncoder/Decoder pair runs; dgc has its own encoder (compress/dgc.h).
std::expected<FeedbackKind, std::string> wrapperKind(FeedbackKind kind) {
  if (kind == FeedbackKind::kDgc || kFeedbacks.name(kind) == "unknown") {
    return std::unexpected(fmt::format(
        "compression.feedback: {} is not an error-feedback wrapper (DgcEncoder runs dgc)",
        kFeedbacks.name(kind)));
  }
  return kind;
}

// EF21 and its variants, and DIANA, keep a vector both sides update with each message.
bool tracksReplica(FeedbackKind k) {
  return k == FeedbackKind::kEf21 || k == FeedbackKind::kEf21Sgdm || k == FeedbackKind::kEf21W ||
         k == FeedbackKind::kDiana;
}

const char* replicaName(FeedbackKind k) { return k == FeedbackKind::kDiana ? "shift" : "replica"; }

}  // namespace

std::expected<std::unique_ptr<FeedbackEncoder>, std::string> FeedbackEncoder::make(
    std::unique_ptr<Compressor> compressor, const FeedbackConfig& config, std::size_t dim) {
  const auto kind = wrapperKind(config.kind);
  if (!kind) return std::unexpected(kind.error());
  std::unique_ptr<FeedbackEncoder> e(new FeedbackEncoder());
  e->config_ = config;
  const FeedbackKind k = e->kind_ = *kind;
  if (k == FeedbackKind::kEf21Sgdm && !(config.eta > 0 && config.eta <= 1)) {
    return std::unexpected("compression.eta: must be in (0, 1]");
  }
  if (k == FeedbackKind::kEf21W) {
    auto s = ef21wScale(config);
    if (!s) return std::unexpected(s.error());
    e->scale_ = *s;
  }
  if (k == FeedbackKind::kDiana) {
    const auto omega = compressor->varianceFactor(dim);
    if (!omega) {
      return std::unexpected(fmt::format(
          "compression.feedback: diana needs an unbiased compressor (randk or qsgd with "
          "unbiased: true, natural, terngrad), not {}",
          compressor->name()));
    }
    e->alpha_ = config.alpha > 0 ? config.alpha : 1.0 / (*omega + 1.0);
    if (!(e->alpha_ > 0 && e->alpha_ <= 1))
      return std::unexpected("compression.alpha: must be in (0, 1]");
  }
  e->compressor_ = std::move(compressor);
  if (k == FeedbackKind::kEf14) e->error_.assign(dim, 0.0f);
  if (tracksReplica(k)) e->replica_.assign(dim, 0.0f);
  if (k == FeedbackKind::kEf21Sgdm) e->momentum_.assign(dim, 0.0f);
  if (k != FeedbackKind::kNone) e->scratch_.assign(dim, 0.0f);
  return e;
}

std::expected<void, std::string> FeedbackEncoder::encode(std::span<const float> v, Encoded& out) {
  if (kind_ == FeedbackKind::kNone) return compressor_->encode(v, out);
  PHALANX_CHECK(v.size() == scratch_.size(), "FeedbackEncoder: length changed");
  // The decoded message updates the state through decodeAdd, exactly as a receiver applies it.
  if (kind_ == FeedbackKind::kEf14) {
    std::copy(error_.begin(), error_.end(), scratch_.begin());
    kernels::axpy(1.0f, v, scratch_);  // p = v + e
    if (auto ok = compressor_->encode(scratch_, out); !ok) return ok;
    auto applied = decodeAdd(out.bytes, -1.0f, scratch_);  // e = p - q
    PHALANX_CHECK(applied.has_value(), "ef14: own message does not decode");
    error_.swap(scratch_);
    return {};
  }
  std::span<const float> target = v;
  if (kind_ == FeedbackKind::kEf21Sgdm) {
    kernels::axpby(float(config_.eta), v, float(1.0 - config_.eta), momentum_);
    target = momentum_;
  }
  // scratch = target·scale - r  (scale is 1 except for ef21_w); r is h for diana.
  std::copy(target.begin(), target.end(), scratch_.begin());
  kernels::axpby(-1.0f, replica_, scale_, scratch_);
  if (auto ok = compressor_->encode(scratch_, out); !ok) return ok;
  const float step = kind_ == FeedbackKind::kDiana ? float(alpha_) : 1.0f;
  auto applied = decodeAdd(out.bytes, step, replica_);
  PHALANX_CHECK(applied.has_value(), "feedback: own message does not decode");
  return {};
}

std::vector<StateVector> FeedbackEncoder::state() {
  std::vector<StateVector> s;
  if (!error_.empty()) s.push_back({"error", error_});
  if (!momentum_.empty()) s.push_back({"momentum", momentum_});
  if (!replica_.empty()) s.push_back({replicaName(kind_), replica_});
  return s;
}

void FeedbackEncoder::reset() {
  for (auto* v : {&error_, &replica_, &momentum_}) std::fill(v->begin(), v->end(), 0.0f);
}

std::expected<std::unique_ptr<FeedbackDecoder>, std::string> FeedbackDecoder::make(
    const FeedbackConfig& config, std::size_t dim, double alpha) {
  const auto kind = wrapperKind(config.kind);
  if (!kind) return std::unexpected(kind.error());
  std::unique_ptr<FeedbackDecoder> d(new FeedbackDecoder());
  d->kind_ = *kind;
  if (*kind == FeedbackKind::kEf21W) {
    auto s = ef21wScale(config);
    if (!s) return std::unexpected(s.error());
    d->unscale_ = 1.0f / *s;
  }
  if (*kind == FeedbackKind::kDiana && !(alpha > 0 && alpha <= 1)) {
    return std::unexpected("compression.alpha: must be in (0, 1]");
  }
  d->alpha_ = float(alpha);
  d->estimate_.assign(dim, 0.0f);
  if (tracksReplica(*kind)) d->replica_.assign(dim, 0.0f);
  return d;
}

std::expected<void, std::string> FeedbackDecoder::receive(std::span<const std::uint8_t> message) {
  if (!tracksReplica(kind_)) return decode(message, estimate_);  // none, ef14
  if (kind_ == FeedbackKind::kDiana) {
    // estimate = h + q, then h += alpha q. decodeAdd checks the whole message before writing.
    std::copy(replica_.begin(), replica_.end(), estimate_.begin());
    if (auto ok = decodeAdd(message, 1.0f, estimate_); !ok) {
      std::copy(replica_.begin(), replica_.end(), estimate_.begin());
      return ok;
    }
    auto applied = decodeAdd(message, alpha_, replica_);
    PHALANX_CHECK(applied.has_value(), "diana: a checked message failed to apply");
    return {};
  }
  if (auto ok = decodeAdd(message, 1.0f, replica_); !ok) return ok;
  std::copy(replica_.begin(), replica_.end(), estimate_.begin());
  if (unscale_ != 1.0f) kernels::scale(unscale_, estimate_);
  return {};
}

std::vector<StateVector> FeedbackDecoder::state() {
  if (replica_.empty()) return {};
  return {{replicaName(kind_), replica_}};
}

void FeedbackDecoder::reset() {
  std::fill(replica_.begin(), replica_.end(), 0.0f);
  std::fill(estimate_.begin(), estimate_.end(), 0.0f);
}

}  // namespace phalanx::compress
