// Wire packing and quantization on the device (cuda_ops.h): fp16, bf16, sign bits,
// fixed-width codes, QSGD — the same bytes as pack.cc and quantize.cc for finite inputs.
#include <cuda_fp16.h>

#include <cub/block/block_reduce.cuh>
#include <stdexcept>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace phalanx::kernels::cuda {
namespace {

constexpr float kHalfMax = 65504.0f;
constexpr float kBfloat16Max = 3.38953139e38f;  // 0x7f7f: the largest finite bfloat16

__device__ __forceinline__ bool finite(float v) {
  return (__float_as_uint(v) & 0x7f800000u) != 0x7f800000u;
}

// One flag word per call: set when a kernel meets a non-finite input or result.
class Flag {
 public:
  unsigned* reset() {
    if (word_.size() == 0) word_.resize(1);
    fillZero(word_.data(), sizeof(unsigned));
    return word_.data();
  }
  bool raised() {
    unsigned v = 0;
    copyToHost(&v, word_.data(), sizeof v);
    return v != 0;
  }

 private:
  DeviceArray<unsigned> word_;
};

Flag& flag() {
  static Flag f;
  return f;
}

__global__ void toHalfKernel(const float* x, std::size_t n, std::uint16_t* out, unsigned* bad) {
  for (std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; j < n;
       j += std::size_t(gridDim.x) * blockDim.x) {
    const float v = x[j];
    if (!finite(v)) *bad = 1;
    // Finite values beyond the range saturate (pack.h); NaN passes through unclamped.
    const float c = v > kHalfMax ? kHalfMax : (v < -kHalfMax ? -kHalfMax : v);
    out[j] = __half_as_ushort(__float2half_rn(c));
  }
}

__global__ void toBfloat16Kernel(const float* x, std::size_t n, std::uint16_t* out, unsigned* bad) {
  for (std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; j < n;
       j += std::size_t(gridDim.x) * blockDim.x) {
    const float v = x[j];
    if (!finite(v)) *bad = 1;
    if (v != v) {  // NaN: Eigen's quiet NaN with the input's sign; ±Inf saturates below
      out[j] = (__float_as_uint(v) >> 31) != 0 ? std::uint16_t(0xffc0) : std::uint16_t(0x7fc0);
      continue;
    }
    const float c = v > kBfloat16Max ? kBfloat16Max : (v < -kBfloat16Max ? -kBfloat16Max : v);
    const std::uint32_t u = __float_as_uint(c);
    out[j] = std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);  // round to nearest even
  }
}

// A warp's 32 consecutive entries make one 32-bit mask; lanes 0..3 write its bytes.
__global__ void packSignsKernel(const float* x, std::size_t n, std::uint8_t* out) {
  const std::size_t bytes = (n + 7) / 8;
  const unsigned lane = threadIdx.x % 32;
  const std::size_t warps = std::size_t(gridDim.x) * blockDim.x / 32;
  for (std::size_t base = (blockIdx.x * std::size_t(blockDim.x) + threadIdx.x - lane); base < n;
       base += warps * 32) {
    const std::size_t j = base + lane;
    const unsigned mask = __ballot_sync(0xffffffffu, j < n && x[j] < 0.0f);
    const std::size_t at = base / 8 + lane;
    if (lane < 4 && at < bytes) out[at] = std::uint8_t(mask >> (8 * lane));
  }
}

// Output byte B holds bits [8B, 8B + 8): the codes that overlap them, LSB first.
__global__ void packBitsKernel(const std::uint32_t* codes, std::size_t n, unsigned width,
                               std::uint8_t* out, std::size_t bytes) {
  const std::uint32_t mask = (1u << width) - 1;
  for (std::size_t b = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; b < bytes;
       b += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t lo = 8 * b, hi = lo + 8;
    std::uint32_t byte = 0;
    for (std::size_t j = lo / width; j < n && j * width < hi; ++j) {
      const std::uint64_t bits = std::uint64_t(codes[j] & mask);
      const std::size_t at = j * width;  // first bit of code j
      byte |= at >= lo ? std::uint32_t(bits << (at - lo)) : std::uint32_t(bits >> (lo - at));
    }
    out[b] = std::uint8_t(byte);
  }
}

// One block per bucket: ‖x_B‖ in double, then each entry's stochastic level (quantize.cc).
__global__ void qsgdKernel(const float* x, std::size_t n, std::size_t bucket, std::size_t buckets,
                           unsigned levels, std::uint32_t negative, CounterRng rng, float* norms,
                           std::uint32_t* codes, unsigned* bad) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  __shared__ float shared_norm;
  for (std::size_t b = blockIdx.x; b < buckets; b += gridDim.x) {
    const std::size_t begin = b * bucket;
    const std::size_t end = begin + bucket < n ? begin + bucket : n;
    double sq = 0;
    for (std::size_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
      sq += double(x[j]) * double(x[j]);
    }
    const double total = Reduce(temp).Sum(sq);
    if (threadIdx.x == 0) {
      shared_norm = float(sqrt(total));
      norms[b] = shared_norm;
      if (!finite(shared_norm)) *bad = 1;
    }
    __syncthreads();
    const float norm = shared_norm;
    if (finite(norm)) {
      for (std::size_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
        std::uint32_t level = 0;
        if (norm > 0.0f) {
          const double r = double(levels) * fabs(double(x[j])) / double(norm);
          const double low = floor(r);
          level = std::uint32_t(low) + std::uint32_t(double(rng.uniform(j)) < r - low);
          level = level < levels ? level : levels;
        }
        codes[j] = level | (level != 0 && x[j] < 0.0f ? negative : 0u);
      }
    }
    __syncthreads();  // temp and shared_norm are reused by the next bucket
  }
}

}  // namespace

bool toHalf(const float* x, std::size_t n, std::uint16_t* out) {
  unsigned* bad = flag().reset();
  if (n > 0) {
    toHalfKernel<<<gridFor(n), kThreads, 0, stream()>>>(x, n, out, bad);
    PHALANX_CUDA_LAUNCHED("toHalfKernel");
  }
  return !flag().raised();
}

bool toBfloat16(const float* x, std::size_t n, std::uint16_t* out) {
  unsigned* bad = flag().reset();
  if (n > 0) {
    toBfloat16Kernel<<<gridFor(n), kThreads, 0, stream()>>>(x, n, out, bad);
    PHALANX_CUDA_LAUNCHED("toBfloat16Kernel");
  }
  return !flag().raised();
}

void packSigns(const float* x, std::size_t n, std::uint8_t* out) {
  if (n == 0) return;
  packSignsKernel<<<gridFor(n), kThreads, 0, stream()>>>(x, n, out);
  PHALANX_CUDA_LAUNCHED("packSignsKernel");
}

void packBits(const std::uint32_t* codes, std::size_t n, unsigned width, std::uint8_t* out) {
  if (width < 1 || width > 24)
    throw std::invalid_argument("cuda::packBits: width must be in 1..24");
  const std::size_t bytes = (n * width + 7) / 8;
  if (bytes == 0) return;
  packBitsKernel<<<gridFor(bytes), kThreads, 0, stream()>>>(codes, n, width, out, bytes);
  PHALANX_CUDA_LAUNCHED("packBitsKernel");
}

bool qsgdQuantize(const float* x, std::size_t n, std::size_t bucket, unsigned levels,
                  unsigned width, CounterRng rng, float* norms, std::uint32_t* codes) {
  if (bucket < 1 || levels < 1 || width < 2 || width > 24 || levels >= (1u << (width - 1))) {
    throw std::invalid_argument("cuda::qsgdQuantize: bad shape");
  }
  const std::size_t buckets = (n + bucket - 1) / bucket;
  unsigned* bad = flag().reset();
  if (buckets > 0) {
    const unsigned grid = unsigned(buckets < 132 * 16 ? buckets : 132 * 16);
    qsgdKernel<<<grid, kThreads, 0, stream()>>>(x, n, bucket, buckets, levels, 1u << (width - 1),
                                                rng, norms, codes, bad);
    PHALANX_CUDA_LAUNCHED("qsgdKernel");
  }
  return !flag().raised();
}

}  // namespace phalanx::kernels::cuda
