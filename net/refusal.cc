#include "net/refusal.h"

namespace phalanx::net {

Refusal refusalOf(FrameError e) {
  switch (e) {
    case FrameError::kEmpty:
      return Refusal::kEmpty;
    case FrameError::kOversized:
      return Refusal::kOversized;
    case FrameError::kMalformed:
      return Refusal::kMalformed;
    case FrameError::kNoBody:
      return Refusal::kNoBody;
    case FrameError::kInvalid:
      break;
  }
  return Refusal::kInvalid;
}

Refusal refusalOf(v1::Goodbye::Reason r) {
  switch (r) {
    case v1::Goodbye::LEAVING:
      return Refusal::kLeaving;
    case v1::Goodbye::WRONG_CLUSTER:
      return Refusal::kWrongCluster;
    case v1::Goodbye::WRONG_VERSION:
      return Refusal::kWrongVersion;
    case v1::Goodbye::WRONG_DIMENSION:
      return Refusal::kWrongDimension;
    case v1::Goodbye::WRONG_DIGEST:
      return Refusal::kWrongDigest;
    case v1::Goodbye::UNKNOWN_NODE:
      return Refusal::kUnknownNode;
    case v1::Goodbye::DUPLICATE_CONNECTION:
      return Refusal::kDuplicateConnection;
    case v1::Goodbye::IDENTITY_MISMATCH:
      return Refusal::kIdentityMismatch;
    default:  // PROTOCOL_ERROR, REASON_UNSPECIFIED and numbers no version defines
      return Refusal::kProtocolError;
  }
}

std::optional<Refusal> refusalOf(Admission a) {
  switch (a) {
    case Admission::kAccepted:
    case Admission::kDuplicate:
      return std::nullopt;
    case Admission::kEquivocation:
      return Refusal::kEquivocation;
    case Admission::kStale:
      return Refusal::kStale;
    case Admission::kTooFarAhead:
      return Refusal::kTooFarAhead;
    case Admission::kUnknownSender:
      return Refusal::kUnknownSender;
  }
  return Refusal::kProtocolError;
}

}  // namespace phalanx::net
