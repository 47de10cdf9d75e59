#include "compress/powersgd.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "compress/formats.h"
#include "kernels/counter_rng.h"

namespace phalanx::compress {
namespace {

struct Plan {
  LayerShape shape;
  std::size_t rank = 0;   // 0: dense
  std::vector<double> q;  // cols × rank, row-major: the warm start
};

class PowerSgdCompressor final : public Compressor {
 public:
  PowerSgdCompressor(const CompressorConfig& c) {
    const kernels::CounterRng rng{c.seed};
    for (std::size_t l = 0; l < c.layers.size(); ++l) {
      Plan plan{.shape = c.layers[l]};
      const std::size_t rows = plan.shape.rows, cols = plan.shape.cols;
      const std::size_t r = std::min<std::size_t>(std::size_t(c.rank), std::min(rows, cols));
      // Low rank pays only when r·(rows + cols) < rows·cols.
      if (plan.shape.isMatrix() && r * (rows + cols) < rows * cols) {
        plan.rank = r;
        plan.q.resize(cols * r);
        // Uniform in [-1, 1): any full-rank start works, and it needs no libm, so every
        // machine draws the same Q.
        const auto stream = rng.fork(l);
        for (std::size_t i = 0; i < plan.q.size(); ++i)
          plan.q[i] = 2.0 * double(stream.uniform(i)) - 1.0;
      }
      total_ += plan.shape.size();
      plans_.push_back(std::move(plan));
    }
  }

  std::expected<void, std::string> encode(std::span<const float> x, Encoded& out) override {
    if (x.size() != total_) {
      return std::unexpected(
          fmt::format("powersgd: input has {} entries, the layers {}", x.size(), total_));
    }
    out.bytes.clear();
    ByteWriter w(out.bytes);
    detail::writeHeader(w, CodecId::kPowersgd, std::uint32_t(x.size()));
    w.varint(plans_.size());
    std::size_t offset = 0;
    for (Plan& plan : plans_) {
      const auto m = x.subspan(offset, plan.shape.size());
      offset += m.size();
      if (plan.rank == 0) {
        w.u8(0);
        w.varint(m.size());
        w.varint(1);
        for (const float v : m) {
          if (!std::isfinite(v)) return std::unexpected("powersgd: the input holds NaN or Inf");
          w.f32(v);
        }
        continue;
      }
      if (!lowRank(plan, m)) return std::unexpected("powersgd: the input holds NaN or Inf");
      w.u8(1);
      w.varint(plan.shape.rows);
      w.varint(plan.shape.cols);
      w.u8(std::uint8_t(plan.rank));
      for (const double v : p_) w.f32(float(v));
      for (const double v : plan.q) w.f32(float(v));
    }
    return {};
  }

  std::string_view name() const override { return "powersgd"; }

 private:
  // P = M Q, orthonormalize P's columns, Q = Mᵀ P. Fixed loop order in double: the same
  // bits on every machine. Returns false when a result is not finite.
  bool lowRank(Plan& plan, std::span<const float> m) {
    const std::size_t rows = plan.shape.rows, cols = plan.shape.cols, r = plan.rank;
    p_.assign(rows * r, 0.0);
    for (std::size_t i = 0; i < rows; ++i) {
      const float* row = m.data() + i * cols;
      for (std::size_t c = 0; c < cols; ++c) {
        for (std::size_t k = 0; k < r; ++k) p_[i * r + k] += double(row[c]) * plan.q[c * r + k];
      }
    }
    for (std::size_t k = 0; k < r; ++k) {  // modified Gram–Schmidt
      for (std::size_t j = 0; j < k; ++j) {
        double dot = 0;
        for (std::size_t i = 0; i < rows; ++i) dot += p_[i * r + j] * p_[i * r + k];
        for (std::size_t i = 0; i < rows; ++i) p_[i * r + k] -= dot * p_[i * r + j];
      }
      double norm = 0;
      for (std::size_t i = 0; i < rows; ++i) norm += p_[i * r + k] * p_[i * r + k];
      norm = std::sqrt(norm);
      // A column with no energy left stays zero: it contributes nothing to P Qᵀ.
      const double inv = norm > 1e-30 ? 1.0 / norm : 0.0;
      for (std::size_t i = 0; i < rows; ++i) p_[i * r + k] *= inv;
    }
    q_.assign(cols * r, 0.0);
    for (std::size_t i = 0; i < rows; ++i) {
      const float* row = m.data() + i * cols;
      for (std::size_t c = 0; c < cols; ++c) {
        for (std::size_t k = 0; k < r; ++k) q_[c * r + k] += double(row[c]) * p_[i * r + k];
      }
    }
    const auto finite = [](double v) { return std::isfinite(float(v)); };
    if (!std::all_of(p_.begin(), p_.end(), finite) || !std::all_of(q_.begin(), q_.end(), finite)) {
      return false;  // keep the previous warm start: one bad input must not poison the next
    }
    plan.q.swap(q_);
    return true;
  }

  std::vector<Plan> plans_;
  std::size_t total_ = 0;
  std::vector<double> p_, q_;
};

}  // namespace

std::expected<std::unique_ptr<Compressor>, std::string> makePowerSgd(const CompressorConfig& c) {
  if (c.rank < 1 || c.rank > 255) return std::unexpected("compression.rank: must be in 1..255");
  if (c.layers.empty()) {
    return std::unexpected("compression.codec: powersgd needs the model's layer shapes");
  }
  // Layers too small to gain from a factorization (biases, tiny matrices) go dense.
  return std::make_unique<PowerSgdCompressor>(c);
}

}  // namespace phalanx::compress
