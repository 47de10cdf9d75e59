#include "kernels/cuda_offload.h"

#include <mutex>

#include "base/check.h"
#include "kernels/cuda/cuda_ops.h"

namespace phalanx::kernels::offload {
namespace {

// Device buffers reused across calls (they only grow), behind one lock.
struct Workspace {
  std::mutex lock;
  cuda::DeviceArray<float> x, y, rows;
  cuda::DeviceArray<const float*> row_ptrs;
  cuda::DeviceArray<double> doubles, weights;
  cuda::DeviceArray<std::uint32_t> indices, codes;
  cuda::DeviceArray<std::uint16_t> halves;
  cuda::DeviceArray<std::uint8_t> bytes;
  cuda::TopkScratch topk;
};

Workspace& workspace() {
  static Workspace w;
  return w;
}

// Uploads the rows one after the other into w.rows and their device addresses into w.row_ptrs.
std::size_t uploadRows(Workspace& w, Rows rows) {
  const std::size_t n = rows.size();
  const std::size_t d = n == 0 ? 0 : rows[0].size();
  for (const auto& r : rows) PHALANX_CHECK(r.size() == d, "offload: rows differ in length");
  w.rows.resize(n * d);
  std::vector<const float*> ptrs(n);
  for (std::size_t k = 0; k < n; ++k) {
    cuda::copyToDevice(w.rows.data() + k * d, rows[k].data(), d * sizeof(float));
    ptrs[k] = w.rows.data() + k * d;
  }
  w.row_ptrs.upload(ptrs.data(), n);
  return d;
}

}  // namespace

bool fitsRowKernels(std::size_t n) { return n > 0 && n <= cuda::kMaxOrderRows; }

void topkIndices(std::span<const float> x, std::size_t k, std::vector<std::uint32_t>& out) {
  auto& w = workspace();
  std::scoped_lock hold(w.lock);
  w.x.upload(x.data(), x.size());
  w.indices.resize(k);
  cuda::topkIndices(w.x.data(), x.size(), k, w.indices.data(), w.topk);
  out.resize(k);
  w.indices.download(out.data());
}

bool toHalf(std::span<const float> in, std::span<std::uint16_t> out) {
  PHALANX_CHECK(in.size() == out.size(), "toHalf: size mismatch");
  auto& w = workspace();
  std::scoped_lock hold(w.lock);
  w.x.upload(in.data(), in.size());
  w.halves.resize(in.size());
  const bool ok = cuda::toHalf(w.x.data(), in.size(), w.halves.data());
  w.halves.download(out.data());
  return ok;
}

bool toBfloat16(std::span<const float> in, std::span<std::uint16_t> out) {
  PHALANX_CHECK(in.size() == out.size(), "toBfloat16: size mismatch");
  auto& w = workspace();
  std::scoped_lock hold(w.lock);
  w.x.upload(in.data(), in.size());
  w.halves.resize(in.size());
  const bool ok = cuda::toBfloat16(w.x.data(), in.size(), w.halves.data());
  w.halves.download(out.data());
  return ok;
}

void packSigns(std::span<const float> x, std::span<std::uint8_t> out) {
  PHALANX_CHECK(out.size() == (x.size() + 7) / 8, "packSigns: wrong output size");
  auto& w = workspace();
  std::scoped_lock hold(w.lock);
  w.x.upload(x.data(), x.size());
  w.bytes.resize(out.size());
  cuda::packSigns(w.x.data(), x.size(), w.bytes.data());
  w.bytes.download(out.data());
}

bool qsgdQuantize(std::span<const float> x, std::size_t bucket, unsigned levels, unsigned width,
                  CounterRng rng, std::span<float> norms, std::span<std::uint32_t> codes) {
  PHALANX_CHECK(
      bucket >= 1 && codes.size() == x.size() && norms.size() == (x.size() + bucket - 1) / bucket,
      "qsgdQuantize: wrong output sizes");
  auto& w = workspace();
  std::scoped_lock hold(w.lock);
  w.x.upload(x.data(), x.size());
  w.y.resize(norms.size());
  w.codes.resize(codes.size());
  const bool ok = cuda::qsgdQuantize(w.x.data(), x.size(), bucket, levels, width, rng, w.y.data(),
                                     w.codes.data());
  w.y.download(norms.data());
  w.codes.download(codes.data());
  return ok;
}

void squaredDistancesTo(std::span<const float> center, Rows rows, std::span<double> out) {
  PHALANX_CHECK(out.size() == rows.size(), "squaredDistancesTo: one output per row");
  auto& w = workspace();
  std::scoped_lock hold(w.lock);
  const std::size_t d = uploadRows(w, rows);
  PHALANX_CHECK(rows.empty() || d == center.size(), "squaredDistancesTo: length mismatch");
  w.x.upload(center.data(), center.size());
  w.doubles.resize(rows.size());
  cuda::squaredDistancesTo(w.x.data(), w.row_ptrs.data(), rows.size(), center.size(),
                           w.doubles.data());
  w.doubles.download(out.data());
}

double squaredDistancesAndSum(std::span<const float> center, Rows rows, std::span<double> out,
                              std::span<float> sum) {
  PHALANX_CHECK(out.size() == rows.size() && sum.size() == center.size(),
                "squaredDistancesAndSum: output sizes");
  auto& w = workspace();
  std::scoped_lock hold(w.lock);
  const std::size_t d = uploadRows(w, rows);
  PHALANX_CHECK(rows.empty() || d == center.size(), "squaredDistancesAndSum: length mismatch");
  w.x.upload(center.data(), center.size());
  w.y.resize(center.size());
  w.doubles.resize(rows.size());
  const double norm = cuda::squaredDistancesAndSum(w.x.data(), w.row_ptrs.data(), rows.size(),
                                                   center.size(), w.doubles.data(), w.y.data());
  w.doubles.download(out.data());
  w.y.download(sum.data());
  return norm;
}

void pairwiseSquaredDistances(Rows rows, std::span<double> out) {
  PHALANX_CHECK(out.size() == rows.size() * rows.size(), "pairwiseSquaredDistances: output size");
  auto& w = workspace();
  std::scoped_lock hold(w.lock);
  const std::size_t d = uploadRows(w, rows);
  w.doubles.resize(out.size());
  cuda::pairwiseSquaredDistances(w.row_ptrs.data(), rows.size(), d, w.doubles.data());
  w.doubles.download(out.data());
}

void weightedSum(Rows rows, std::span<const double> weights, std::span<float> out) {
  PHALANX_CHECK(weights.size() == rows.size(), "weightedSum: one weight per row");
  auto& w = workspace();
  std::scoped_lock hold(w.lock);
  const std::size_t d = uploadRows(w, rows);
  PHALANX_CHECK(rows.empty() || d == out.size(), "weightedSum: output length");
  w.weights.upload(weights.data(), weights.size());
  w.y.resize(out.size());
  cuda::weightedSum(w.row_ptrs.data(), w.weights.data(), rows.size(), out.size(), w.y.data());
  w.y.download(out.data());
}

bool accumulateThenScale(Rows rows, std::span<const double> weights, double scale,
                         std::span<float> z) {
  PHALANX_CHECK(weights.size() == rows.size(), "accumulateThenScale: one weight per row");
  auto& w = workspace();
  std::scoped_lock hold(w.lock);
  // Only the rows with a weight are read: upload just those (NNA's excluded few).
  std::vector<std::span<const float>> used;
  std::vector<double> used_weights;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    if (weights[k] == 0.0) continue;
    PHALANX_CHECK(rows[k].size() == z.size(), "accumulateThenScale: output length");
    used.push_back(rows[k]);
    used_weights.push_back(weights[k]);
  }
  uploadRows(w, used);
  w.weights.upload(used_weights.data(), used_weights.size());
  w.y.upload(z.data(), z.size());
  const bool ok = cuda::accumulateThenScale(w.row_ptrs.data(), w.weights.data(), used.size(),
                                            z.size(), scale, w.y.data());
  w.y.download(z.data());
  return ok;
}

void coordinateTrimmedMean(Rows rows, std::size_t trim, std::span<float> out) {
  auto& w = workspace();
  std::scoped_lock hold(w.lock);
  const std::size_t d = uploadRows(w, rows);
  PHALANX_CHECK(d == out.size(), "coordinate rule: shape mismatch");
  w.y.resize(d);
  cuda::coordinateTrimmedMean(w.row_ptrs.data(), rows.size(), d, trim, w.y.data());
  w.y.download(out.data());
}

void coordinateMedian(Rows rows, std::span<float> out) {
  auto& w = workspace();
  std::scoped_lock hold(w.lock);
  const std::size_t d = uploadRows(w, rows);
  PHALANX_CHECK(d == out.size(), "coordinate rule: shape mismatch");
  w.y.resize(d);
  cuda::coordinateMedian(w.row_ptrs.data(), rows.size(), d, w.y.data());
  w.y.download(out.data());
}

}  // namespace phalanx::kernels::offload
