#include "kernels/device.h"

#include <gtest/gtest.h>

namespace phalanx::kernels {
namespace {

TEST(Device, CountIsZeroWithoutCudaAndSummaryNamesTheBackend) {
  const int n = cudaDeviceCount();
  EXPECT_GE(n, 0);
  if (!builtWithCuda()) {
    EXPECT_EQ(n, 0);
  }
  const std::string summary = backendSummary();
  EXPECT_TRUE(summary.starts_with("cpu")) << summary;
  const bool names_cuda_backend = summary.starts_with("cpu+cuda");
  EXPECT_EQ(builtWithCuda(), names_cuda_backend) << summary;
}

}  // namespace
}  // namespace phalanx::kernels
