#include "kernels/backend.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "kernels/device.h"

namespace phalanx::kernels {
namespace {

// Restores the CPU backend so other tests in this binary see the default.
struct BackendTest : ::testing::Test {
  ~BackendTest() override { useBackend(Device::kCpu); }
};

TEST_F(BackendTest, CpuIsTheDefaultAndAlwaysAvailable) {
  EXPECT_EQ(activeBackend(), Backend::kCpu);
  EXPECT_EQ(useBackend(Device::kCpu), Backend::kCpu);
  EXPECT_EQ(kBackends.name(activeBackend()), "cpu");
  EXPECT_FALSE(offloading(std::size_t(1) << 30));
}

TEST_F(BackendTest, AutoPicksCudaExactlyWhenADeviceAnswers) {
  const Backend chosen = useBackend(Device::kAuto);
  EXPECT_EQ(chosen, cudaDeviceCount() > 0 ? Backend::kCuda : Backend::kCpu);
  EXPECT_EQ(activeBackend(), chosen);
  if (chosen == Backend::kCuda) {
    EXPECT_TRUE(offloading(kOffloadMinEntries));
    EXPECT_FALSE(offloading(kOffloadMinEntries - 1));  // small inputs stay on the CPU
  }
}

TEST_F(BackendTest, CudaWithoutADeviceIsAClearErrorAndKeepsTheCpu) {
  if (cudaDeviceCount() > 0) GTEST_SKIP() << "a CUDA device answers here";
  try {
    useBackend(Device::kCuda);
    FAIL() << "useBackend(cuda) should throw without a device";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda"), std::string::npos) << e.what();
  }
  EXPECT_EQ(activeBackend(), Backend::kCpu);
}

TEST_F(BackendTest, UnknownNameIsRejected) {
  EXPECT_FALSE(kDevices.parse("gpu").has_value());  // a config names only auto, cpu, cuda
  EXPECT_THROW(useBackend(Device(7)), std::invalid_argument);
  EXPECT_EQ(activeBackend(), Backend::kCpu);
}

}  // namespace
}  // namespace phalanx::kernels
