// Device memory, copies, the backend's stream and event timers (cuda_ops.h).

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace phalanx::kernels::cuda {

cudaStream_t stream() {
  static cudaStream_t s = [] {
    cudaStream_t created = nullptr;
    PHALANX_CUDA(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));
    return created;
  }();
  return s;
}

void* allocate(std::size_t bytes) {
  void* p = nullptr;
  if (bytes > 0) PHALANX_CUDA(cudaMalloc(&p, bytes));
  return p;
}

void release(void* p) noexcept {
  if (p != nullptr) cudaFree(p);  // an error here has nowhere to go; the driver reports it later
}

void copyToDevice(void* device_dst, const void* host_src, std::size_t bytes) {
  if (bytes == 0) return;
  PHALANX_CUDA(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream()));
  PHALANX_CUDA(cudaStreamSynchronize(stream()));  // the host buffer may change on return
}

void copyToHost(void* host_dst, const void* device_src, std::size_t bytes) {
  if (bytes == 0) return;
  PHALANX_CUDA(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, stream()));
  PHALANX_CUDA(cudaStreamSynchronize(stream()));
}

void copyOnDevice(void* device_dst, const void* device_src, std::size_t bytes) {
  if (bytes == 0) return;
  PHALANX_CUDA(cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice, stream()));
}

void fillZero(void* device_dst, std::size_t bytes) {
  if (bytes == 0) return;
  PHALANX_CUDA(cudaMemsetAsync(device_dst, 0, bytes, stream()));
}

void synchronize() { PHALANX_CUDA(cudaStreamSynchronize(stream())); }

Timer::Timer() : begin_(nullptr), end_(nullptr) {
  cudaEvent_t b = nullptr, e = nullptr;
  PHALANX_CUDA(cudaEventCreate(&b));
  PHALANX_CUDA(cudaEventCreate(&e));
  begin_ = b;
  end_ = e;
}

Timer::~Timer() {
  cudaEventDestroy(static_cast<cudaEvent_t>(begin_));
  cudaEventDestroy(static_cast<cudaEvent_t>(end_));
}

void Timer::start() { PHALANX_CUDA(cudaEventRecord(static_cast<cudaEvent_t>(begin_), stream())); }

double Timer::stopMs() {
  PHALANX_CUDA(cudaEventRecord(static_cast<cudaEvent_t>(end_), stream()));
  PHALANX_CUDA(cudaEventSynchronize(static_cast<cudaEvent_t>(end_)));
  float ms = 0;
  PHALANX_CUDA(
      cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(begin_), static_cast<cudaEvent_t>(end_)));
  return double(ms);
}

}  // namespace phalanx::kernels::cuda
