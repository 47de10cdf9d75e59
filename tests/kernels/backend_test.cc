#include "kernels/backend.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "kernels/device.h"

namespace phalanx::kernels {
namespace {

// Restores the CPU backend so other tests in this binary see the default.
struct BackendTest : ::testing::Test {
  ~BackendTest() override { useBackend("cpu"); }
};

TEST_F(BackendTest, CpuIsTheDefaultAndAlwaysAvailable) {
  EXPECT_EQ(activeBackend(), Backend::cpu);
  EXPECT_EQ(useBackend("cpu"), Backend::cpu);
  EXPECT_EQ(backendName(activeBackend()), "cpu");
  EXPECT_FALSE(offloading(std::size_t(1) << 30));
}

TEST_F(BackendTest, AutoPicksCudaExactlyWhenADeviceAnswers) {
  const Backend chosen = useBackend("auto");
  EXPECT_EQ(chosen, cudaDeviceCount() > 0 ? Backend::cuda : Backend::cpu);
  EXPECT_EQ(activeBackend(), chosen);
  if (chosen == Backend::cuda) {
    EXPECT_TRUE(offloading(kOffloadMinEntries));
    EXPECT_FALSE(offloading(kOffloadMinEntries - 1));  // small inputs stay on the CPU
  }
}

TEST_F(BackendTest, CudaWithoutADeviceIsAClearErrorAndKeepsTheCpu) {
  if (cudaDeviceCount() > 0) GTEST_SKIP() << "a CUDA device answers here";
  try {
    useBackend("cuda");
    FAIL() << "useBackend(cuda) should throw without a device";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda"), std::string::npos) << e.what();
  }
  EXPECT_EQ(activeBackend(), Backend::cpu);
}

TEST_F(BackendTest, UnknownNameIsRejected) {
  EXPECT_THROW(useBackend("gpu"), std::invalid_argument);
  EXPECT_EQ(activeBackend(), Backend::cpu);
}

}  // namespace
}  // namespace phalanx::kernels
