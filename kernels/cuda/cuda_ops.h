// The CUDA backend's device-side entry points: the hot loops of select.h, pack.h, quantize.h
// and batch_ops.h on buffers that live on the GPU, so a caller that keeps its vectors there
// moves bytes only where the wire needs them. C++17 (nvcc's dialect here); every function runs
// on one stream (the backend's), is ordered with the others on it, and throws
// std::runtime_error naming the CUDA call that failed. Built only when CMake finds nvcc.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/counter_rng.h"

namespace phalanx::kernels::cuda {

// Raw device memory and copies (synchronous with respect to the backend's stream).
void* allocate(std::size_t bytes);
void release(void* p) noexcept;
void copyToDevice(void* device_dst, const void* host_src, std::size_t bytes);
void copyToHost(void* host_dst, const void* device_src, std::size_t bytes);
void copyOnDevice(void* device_dst, const void* device_src, std::size_t bytes);
void fillZero(void* device_dst, std::size_t bytes);
void synchronize();

// An owning device array; grows on demand (never shrinks, so steady-state steps allocate
// nothing). Move-only.
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(std::size_t n) { resize(n); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept : data_(o.data_), size_(o.size_), capacity_(o.capacity_) {
    o.data_ = nullptr;
    o.size_ = o.capacity_ = 0;
  }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    if (this != &o) {
      release(data_);
      data_ = o.data_;
      size_ = o.size_;
      capacity_ = o.capacity_;
      o.data_ = nullptr;
      o.size_ = o.capacity_ = 0;
    }
    return *this;
  }
  ~DeviceArray() { release(data_); }

  void resize(std::size_t n) {
    if (n > capacity_) {
      release(data_);
      data_ = nullptr;
      data_ = static_cast<T*>(allocate(n * sizeof(T)));
      capacity_ = n;
    }
    size_ = n;
  }
  void upload(const T* host, std::size_t n) {
    resize(n);
    copyToDevice(data_, host, n * sizeof(T));
  }
  void download(T* host) const { copyToHost(host, data_, size_ * sizeof(T)); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

// --- selection (select.h) ---

// Scratch reused across top-k calls (candidates, sort buffers, CUB's temporary storage).
struct TopkScratch {
  DeviceArray<std::uint32_t> sample, candidate_keys, candidate_index, sorted_keys, sorted_index;
  DeviceArray<std::uint32_t> count;
  DeviceArray<unsigned char> temp;
};

// out[0..k) = the indices of the k largest |x| (ties to the lower index), ascending: exactly
// kernels::topkIndices. A strided sample (the CPU's stride and start) gives a threshold, one
// pass compacts the candidates, a stable radix sort among them finishes. out holds >= k.
void topkIndices(const float* x, std::size_t n, std::size_t k, std::uint32_t* out,
                 TopkScratch& scratch);

// --- packing and quantization (pack.h, quantize.h) ---

// Bit-exact with the CPU for finite inputs; each returns false when an input is NaN or Inf.
bool toHalf(const float* x, std::size_t n, std::uint16_t* out);
bool toBfloat16(const float* x, std::size_t n, std::uint16_t* out);
void packSigns(const float* x, std::size_t n, std::uint8_t* out);  // packedBytes(n, 1) bytes
void packBits(const std::uint32_t* codes, std::size_t n, unsigned width, std::uint8_t* out);

// QSGD per bucket, as kernels::qsgdQuantize. Norms sum in double in a different order than
// the CPU's, so a norm may differ in its last bit (and then a code at a level boundary).
bool qsgdQuantize(const float* x, std::size_t n, std::size_t bucket, unsigned levels,
                  unsigned width, CounterRng rng, float* norms, std::uint32_t* codes);

// --- batched rows (batch_ops.h) ---
// `rows` is a device array of n device pointers, each to d floats.

void squaredDistancesTo(const float* center, const float* const* rows, std::size_t n, std::size_t d,
                        double* out);
// Also sum[i] = Σ_k rows[k][i] (float, rows in order); returns ‖center‖².
double squaredDistancesAndSum(const float* center, const float* const* rows, std::size_t n,
                              std::size_t d, double* out, float* sum);
// out[i * n + j] = ‖rows[i] - rows[j]‖² (symmetric, zero diagonal).
void pairwiseSquaredDistances(const float* const* rows, std::size_t n, std::size_t d, double* out);
// out = Σ_k weights[k] rows[k] (weights: device doubles; rows of weight exactly 0 not read).
void weightedSum(const float* const* rows, const double* weights, std::size_t n, std::size_t d,
                 float* out);
// z = scale * (z + Σ_k weights[k] rows[k]); false when a result is not finite.
bool accumulateThenScale(const float* const* rows, const double* weights, std::size_t n,
                         std::size_t d, double scale, float* z);
// Per coordinate, sorted: the mean (in double) of the middle n - 2 trim, or the median.
// n <= kMaxOrderRows (the values sit in registers); larger sets stay on the CPU.
constexpr std::size_t kMaxOrderRows = 64;
void coordinateTrimmedMean(const float* const* rows, std::size_t n, std::size_t d, std::size_t trim,
                           float* out);
void coordinateMedian(const float* const* rows, std::size_t n, std::size_t d, float* out);

// --- for benchmarks ---

// Reads n floats once (a sum no one uses): the device-memory read floor.
void readFloor(const float* x, std::size_t n);
// Events on the backend's stream: milliseconds taken by `repeat` calls of a kernel sequence.
class Timer {
 public:
  Timer();
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  void start();
  double stopMs();  // waits for the work queued since start()

 private:
  void* begin_;
  void* end_;
};

}  // namespace phalanx::kernels::cuda
