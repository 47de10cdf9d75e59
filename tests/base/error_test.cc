#include "base/error.h"

#include <gtest/gtest.h>

namespace phalanx::base {
namespace {

class SampleError : public ErrorOf<ErrorKind::kTopology> {
 public:
  using ErrorOf::ErrorOf;
};

TEST(Error, AKindsOwnTypeIsCaughtAsTheOneErrorType) {
  try {
    throw SampleError("t.yaml: nodes[2].port: 70000 is outside [1, 65535]");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kTopology);
    EXPECT_STREQ(e.what(), "t.yaml: nodes[2].port: 70000 is outside [1, 65535]");
    EXPECT_EQ(errorKindName(e.kind()), "topology");
  }
  EXPECT_EQ(errorKindName(ErrorKind::kCheckpoint), "checkpoint");
}

}  // namespace
}  // namespace phalanx::base
