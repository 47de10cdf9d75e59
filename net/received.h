// A round message as a receiver holds it: the header's fields and the payload bytes, shared and
// immutable. The memory network hands every receiver the sender's own buffer, and a replica of a
// dense keyframe reads its values there, so a simulated vector exists once however many
// neighbours hold it (DESIGN.md "Simulation"); TCP reads a large payload into a buffer of
// its connection's small pool, reused once no receiver holds it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "net/proto/phalanx.pb.h"

namespace phalanx::net {

using Payload = std::shared_ptr<const std::vector<std::uint8_t>>;

// What a receiver checked of a payload's bytes, for the other receivers of the same buffer: the
// memory network hands every neighbour the sender's one immutable buffer and one of these with
// it (TCP gives each receiver bytes of its own and none).
struct PayloadChecks {
  std::atomic<std::int8_t> finite_floats{-1};  // compress::viewDense's verdict; -1: not yet
};

class Received {
 public:
  Received() = default;
  // `header`'s payload field must be empty: the bytes are `payload` (null: none); `checks`, when
  // given, is shared with every other receiver of the same buffer.
  Received(v1::RoundMessage header, Payload payload,
           std::shared_ptr<PayloadChecks> checks = nullptr)
      : header_(std::move(header)), payload_(std::move(payload)), checks_(std::move(checks)) {}
  // A whole message, its payload field moved into a shared buffer (tests, the fuzzer).
  Received(v1::RoundMessage message)  // NOLINT(google-explicit-constructor): a message is one
      : header_(std::move(message)) {
    if (header_.payload().empty()) return;
    const std::string& bytes = header_.payload();
    payload_ = std::make_shared<const std::vector<std::uint8_t>>(bytes.begin(), bytes.end());
    header_.clear_payload();
  }

  const v1::RoundMessage& header() const { return header_; }
  std::uint64_t round() const { return header_.round(); }
  std::uint32_t sender() const { return header_.sender(); }
  std::uint64_t sequence() const { return header_.sequence(); }
  v1::RoundMessage::Kind kind() const { return header_.kind(); }
  std::uint32_t codec() const { return header_.codec(); }
  float shift_step() const { return header_.shift_step(); }
  const std::string& signature() const { return header_.signature(); }
  const std::string& digest() const { return header_.digest(); }

  std::span<const std::uint8_t> payload() const {
    return payload_ ? std::span<const std::uint8_t>(*payload_) : std::span<const std::uint8_t>();
  }
  // The buffer itself, for a holder that keeps the bytes past the round (a replica's view).
  const Payload& sharedPayload() const { return payload_; }
  // The checks shared with the buffer's other receivers (null: this receiver's bytes alone).
  PayloadChecks* checks() const { return checks_.get(); }
  // The message as it was on the wire, payload copied in (tests, logs).
  v1::RoundMessage whole() const {
    v1::RoundMessage m = header_;
    if (payload_) m.set_payload(payload_->data(), payload_->size());
    return m;
  }

 private:
  v1::RoundMessage header_;
  Payload payload_;
  std::shared_ptr<PayloadChecks> checks_;
};

}  // namespace phalanx::net
