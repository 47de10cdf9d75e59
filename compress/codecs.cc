// The compressors of ALGORITHMS.md §3.1 (powersgd lives in powersgd.cc) and the factory.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "compress/compressor.h"
#include "compress/formats.h"
#include "compress/powersgd.h"
#include "kernels/counter_rng.h"
#include "kernels/pack.h"
#include "kernels/quantize.h"
#include "kernels/select.h"
#include "kernels/vector_ops.h"

namespace phalanx::compress {
namespace {

using Result = std::expected<void, std::string>;

Result notFinite(std::string_view codec) {
  return std::unexpected(fmt::format("{}: the input holds NaN or Inf", codec));
}

std::uint32_t checkedDim(std::size_t d) {
  PHALANX_CHECK(d <= 0xffffffffull, "compress: vectors longer than 2^32 - 1 entries");
  return std::uint32_t(d);
}

// none, fp16, bf16: every entry, as fp32 or cast to 16 bits.
class DenseCompressor final : public Compressor {
 public:
  explicit DenseCompressor(CodecId id) : id_(id) {}

  Result encode(std::span<const float> x, Encoded& out) override {
    out.bytes.clear();
    ByteWriter w(out.bytes);
    detail::writeHeader(w, id_, checkedDim(x.size()));
    if (id_ == CodecId::kNone) {
      if (!kernels::allFinite(x)) return notFinite(name());
      static_assert(std::endian::native == std::endian::little, "the wire is little-endian");
      if (!x.empty()) std::memcpy(w.grow(x.size() * 4).data(), x.data(), x.size() * 4);
      return {};
    }
    half_.resize(x.size());
    const bool ok =
        id_ == CodecId::kFp16 ? kernels::toHalf(x, half_) : kernels::toBfloat16(x, half_);
    if (!ok) return notFinite(name());
    if (!x.empty()) std::memcpy(w.grow(x.size() * 2).data(), half_.data(), x.size() * 2);
    return {};
  }
  std::string_view name() const override { return codecName(id_); }

 private:
  CodecId id_;
  std::vector<std::uint16_t> half_;
};

// topk (exact, ties by index), topk_sampled (DGC's threshold), threshold (|x| >= lambda).
class SparseCompressor final : public Compressor {
 public:
  SparseCompressor(CodecId id, const CompressorConfig& c, ValueType type)
      : id_(id), density_(c.density), lambda_(float(c.threshold)), type_(type), rng_{c.seed} {}

  Result encode(std::span<const float> x, Encoded& out) override {
    checkedDim(x.size());
    const std::size_t k = keptCount(density_, x.size());
    switch (id_) {
      case CodecId::kTopk:
        kernels::topkIndices(x, k, indices_);
        break;
      case CodecId::kTopkSampled:
        detail::sampledTopk(x, k, rng_.fork(calls_++), indices_);
        break;
      default: {
        const float lambda =
            lambda_ > 0 ? lambda_ : float(0.5 / std::sqrt(double(std::max<std::size_t>(k, 1))));
        kernels::indicesAtLeast(x, kernels::magnitudeKey(lambda), indices_);
        break;
      }
    }
    auto ok = detail::encodeSparse(id_, x, indices_, type_, out.bytes);
    if (!ok) return notFinite(name());
    return {};
  }
  std::string_view name() const override { return codecName(id_); }

 private:
  CodecId id_;
  double density_;
  float lambda_;
  ValueType type_;
  kernels::CounterRng rng_;
  std::uint64_t calls_ = 0;
  std::vector<std::uint32_t> indices_;
};

// randk: k seeded indices without replacement; the seed travels instead of the indices.
class RandkCompressor final : public Compressor {
 public:
  RandkCompressor(const CompressorConfig& c, ValueType type)
      : density_(c.density), unbiased_(c.unbiased), type_(type), rng_{c.seed} {}

  Result encode(std::span<const float> x, Encoded& out) override {
    const std::size_t d = x.size();
    const std::size_t k = keptCount(density_, d);
    const std::uint64_t seed = rng_.bits(calls_++);
    detail::randkIndices(seed, d, k, indices_);
    out.bytes.clear();
    ByteWriter w(out.bytes);
    detail::writeHeader(w, CodecId::kRandk, checkedDim(d));
    w.u64(seed);
    w.varint(k);
    w.u8(std::uint8_t(type_));
    const float scale = unbiased_ && k > 0 ? float(double(d) / double(k)) : 1.0f;
    if (!detail::writeValues(w, x, indices_, scale, type_)) return notFinite(name());
    return {};
  }
  std::string_view name() const override { return "randk"; }
  std::optional<double> varianceFactor(std::size_t d) const override {
    if (!unbiased_) return std::nullopt;
    return double(d) / double(std::max<std::size_t>(keptCount(density_, d), 1)) - 1.0;
  }

 private:
  double density_;
  bool unbiased_;
  ValueType type_;
  kernels::CounterRng rng_;
  std::uint64_t calls_ = 0;
  std::vector<std::uint32_t> indices_;
};

// qsgd: bucketed stochastic levels; the biased variant shrinks each norm by 1 + min(B/s², √B/s).
class QsgdCompressor final : public Compressor {
 public:
  explicit QsgdCompressor(const CompressorConfig& c)
      : bits_(unsigned(c.bits)),
        levels_((1u << (bits_ - 1)) - 1),
        bucket_(c.bucket ? c.bucket : 128),
        unbiased_(c.unbiased),
        rng_{c.seed} {}

  Result encode(std::span<const float> x, Encoded& out) override {
    const std::size_t d = x.size();
    norms_.resize((d + bucket_ - 1) / bucket_);
    codes_.resize(d);
    if (!kernels::qsgdQuantize(x, bucket_, levels_, bits_, rng_.fork(calls_++), norms_, codes_)) {
      return notFinite(name());
    }
    if (!unbiased_) {
      const double B = double(bucket_), s = double(levels_);
      const float shrink = float(1.0 / (1.0 + std::min(B / (s * s), std::sqrt(B) / s)));
      for (float& n : norms_) n *= shrink;
    }
    out.bytes.clear();
    ByteWriter w(out.bytes);
    detail::writeHeader(w, CodecId::kQsgd, checkedDim(d));
    w.u8(std::uint8_t(bits_));
    w.u16(std::uint16_t(levels_));
    w.u32(std::uint32_t(bucket_));
    w.u8(unbiased_ ? 0 : 1);
    for (const float n : norms_) w.f32(n);
    kernels::packBits(codes_, bits_, w.grow(kernels::packedBytes(d, bits_)));
    return {};
  }
  std::string_view name() const override { return "qsgd"; }
  std::optional<double> varianceFactor(std::size_t d) const override {
    if (!unbiased_) return std::nullopt;
    const double B = double(std::min(bucket_, std::max<std::size_t>(d, 1))), s = double(levels_);
    return std::min(B / (s * s), std::sqrt(B) / s);
  }

 private:
  unsigned bits_;
  unsigned levels_;
  std::size_t bucket_;
  bool unbiased_;
  kernels::CounterRng rng_;
  std::uint64_t calls_ = 0;
  std::vector<float> norms_;
  std::vector<std::uint32_t> codes_;
};

// sign: (‖x_B‖₁ / |B|) · sign(x) per bucket (EF-signSGD's scaled sign).
class SignCompressor final : public Compressor {
 public:
  // 1024 by default: 1 + 32/1024 bits per entry, over 30x smaller than fp32.
  explicit SignCompressor(const CompressorConfig& c) : bucket_(c.bucket ? c.bucket : 1024) {}

  Result encode(std::span<const float> x, Encoded& out) override {
    const std::size_t d = x.size();
    scales_.resize((d + bucket_ - 1) / bucket_);
    if (!kernels::bucketMeanAbs(x, bucket_, scales_)) return notFinite(name());
    out.bytes.clear();
    ByteWriter w(out.bytes);
    detail::writeHeader(w, CodecId::kSign, checkedDim(d));
    w.u32(std::uint32_t(bucket_));
    for (const float s : scales_) w.f32(s);
    kernels::packSigns(x, w.grow(kernels::packedBytes(d, 1)));
    return {};
  }
  std::string_view name() const override { return "sign"; }

 private:
  std::size_t bucket_;
  std::vector<float> scales_;
};

// terngrad: clip to 2.5σ, s = max|x|, ternary s·sign·Bernoulli(|x|/s).
class TerngradCompressor final : public Compressor {
 public:
  explicit TerngradCompressor(const CompressorConfig& c) : rng_{c.seed} {}

  Result encode(std::span<const float> x, Encoded& out) override {
    const std::size_t d = x.size();
    double sum = 0, sq = 0;
    for (const float v : x) {
      sum += v;
      sq += double(v) * v;
    }
    const double mean = d > 0 ? sum / double(d) : 0.0;
    const double sigma = d > 0 ? std::sqrt(std::max(0.0, sq / double(d) - mean * mean)) : 0.0;
    if (!std::isfinite(sigma) || !std::isfinite(sq)) return notFinite(name());
    const float clip = float(2.5 * sigma);
    float scale = 0;
    for (const float v : x) scale = std::max(scale, std::min(std::abs(v), clip));
    codes_.assign(d, 0);
    if (scale > 0) kernels::terngradQuantize(x, clip, scale, rng_.fork(calls_++), codes_);
    out.bytes.clear();
    ByteWriter w(out.bytes);
    detail::writeHeader(w, CodecId::kTerngrad, checkedDim(d));
    w.f32(scale);
    kernels::packBits(codes_, 2, w.grow(kernels::packedBytes(d, 2)));
    return {};
  }
  std::string_view name() const override { return "terngrad"; }
  // Without clipping E‖Q‖² = s‖x‖₁ <= √d‖x‖², so ω = √d - 1; clipping at 2.5σ adds a bias
  // that only heavy-tailed vectors see.
  std::optional<double> varianceFactor(std::size_t d) const override {
    return std::sqrt(double(d)) - 1.0;
  }

 private:
  kernels::CounterRng rng_;
  std::uint64_t calls_ = 0;
  std::vector<std::uint32_t> codes_;
};

// natural: stochastic rounding of |x| to a power of two, one byte per entry.
class NaturalCompressor final : public Compressor {
 public:
  explicit NaturalCompressor(const CompressorConfig& c) : rng_{c.seed} {}

  Result encode(std::span<const float> x, Encoded& out) override {
    const std::size_t d = x.size();
    const int top = kernels::naturalTop(x);
    out.bytes.clear();
    ByteWriter w(out.bytes);
    detail::writeHeader(w, CodecId::kNatural, checkedDim(d));
    w.i16(std::int16_t(top));
    const auto codes = w.grow(d);
    if (!kernels::naturalQuantize(x, top, rng_.fork(calls_++), codes)) return notFinite(name());
    return {};
  }
  std::string_view name() const override { return "natural"; }
  std::optional<double> varianceFactor(std::size_t) const override { return 1.0 / 8.0; }

 private:
  kernels::CounterRng rng_;
  std::uint64_t calls_ = 0;
};

std::unexpected<std::string> bad(std::string_view field, std::string why) {
  return std::unexpected(fmt::format("compression.{}: {}", field, why));
}

}  // namespace

std::size_t keptCount(double density, std::size_t d) {
  if (d == 0) return 0;
  const double k = std::round(density * double(d));
  return std::clamp<std::size_t>(std::size_t(std::max(k, 1.0)), 1, d);
}

std::uint64_t compressionSeed(std::uint64_t seed, std::uint64_t node_id, bool shared) {
  return shared ? kernels::mix64(seed) : kernels::mix64(seed ^ kernels::mix64(node_id + 1));
}

std::expected<std::unique_ptr<Compressor>, std::string> makeCompressor(const CompressorConfig& c) {
  const CodecInfo* known = codecInfo(c.codec);
  if (!known || !known->configurable) {
    return bad("codec", fmt::format("codec '{}' is not configurable (allowed: {})",
                                    codecName(c.codec), fmt::join(kCodecNames, ", ")));
  }
  const CodecId id = known->id;
  if (!kValueTypes.contains(c.values)) {
    return bad("values", fmt::format("unknown value type {} (allowed: {})", int(c.values),
                                     fmt::join(kValueTypes.names(), ", ")));
  }
  const ValueType value_type = c.values;
  if (!(c.density > 0 && c.density <= 1)) return bad("density", "must be in (0, 1]");
  if (c.bucket > 0xffffffffull) return bad("bucket", "must be below 2^32 (0: the codec's default)");
  if (!(c.threshold >= 0) || !std::isfinite(c.threshold)) return bad("threshold", "must be >= 0");
  switch (id) {
    case CodecId::kNone:
    case CodecId::kFp16:
    case CodecId::kBf16:
      return std::make_unique<DenseCompressor>(id);
    case CodecId::kTopk:
    case CodecId::kTopkSampled:
    case CodecId::kThreshold:
      return std::make_unique<SparseCompressor>(id, c, value_type);
    case CodecId::kRandk:
      return std::make_unique<RandkCompressor>(c, value_type);
    case CodecId::kQsgd:
      if (c.bits < 2 || c.bits > 16) return bad("bits", "qsgd needs 2..16 bits (sign and level)");
      return std::make_unique<QsgdCompressor>(c);
    case CodecId::kSign:
      return std::make_unique<SignCompressor>(c);
    case CodecId::kTerngrad:
      return std::make_unique<TerngradCompressor>(c);
    case CodecId::kNatural:
      return std::make_unique<NaturalCompressor>(c);
    case CodecId::kPowersgd:
      return makePowerSgd(c);
    case CodecId::kLayered:
      break;
  }
  return bad("codec", "not a compressor name");
}

}  // namespace phalanx::compress
