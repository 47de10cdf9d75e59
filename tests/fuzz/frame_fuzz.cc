// Fuzz target for everything a peer's bytes reach before the node's logic: the frame reader,
// the envelope checks, the round fast path, the transport's direct path for large frames
// (roundLayout), and compress/'s decoder on RoundMessage payloads; and for what an operator's
// text reaches: the fault-command parser (POST /control, `phalanx inject`, faults files).
// libFuzzer's entry point; tests/fuzz/fuzz_driver.cc runs it without libFuzzer.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "compress/decode.h"
#include "net/frame.h"
#include "node/fault_command.h"

namespace {

constexpr std::uint64_t kDim = 4096;  // the model dimension the target pretends to have

void decodePayload(const std::string& payload) {
  std::vector<float> out(kDim, 0.0f);
  const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(payload.data()),
                                            payload.size());
  if (phalanx::compress::decode(bytes, out)) {
    for (const float v : out) {
      if (!(v - v == 0.0f)) {  // an accepted message must decode to finite values
        std::fprintf(stderr, "accepted a %s message that decodes to a non-finite value\n",
                     std::string(phalanx::compress::codecName(phalanx::compress::CodecId(bytes[1])))
                         .c_str());
        __builtin_trap();
      }
    }
  }
  (void)phalanx::compress::decodeAdd(bytes, 0.5f, out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> input(data, size);
  // As a stream of frames.
  phalanx::net::FrameReader reader(phalanx::net::maxFrameBytes(kDim));
  reader.feed(input);
  phalanx::net::v1::Envelope envelope;
  for (int i = 0; i < 64; ++i) {
    const auto next = reader.next(envelope);
    if (!next || !*next) break;
    if (envelope.body_case() == phalanx::net::v1::Envelope::kRound)
      decodePayload(envelope.round().payload());
  }
  // As one body, on both parse paths.
  phalanx::net::v1::RoundMessage round;
  if (const auto fast = phalanx::net::parseRoundInto(input, round); fast && *fast)
    decodePayload(round.payload());
  (void)phalanx::net::parseBody(input);
  // As the head of a large frame on the transport's direct path (roundLayout, then the fields
  // parsed in place and the payload taken as the rest of the body): for the body being exactly
  // this input, and for one that goes on past it.
  for (const std::size_t body_size : {size, size + 4096}) {
    const auto layout = phalanx::net::roundLayout(input, body_size);
    if (!layout) continue;
    if (layout->fields_at + layout->fields_size > size || layout->payload_at > size ||
        layout->payload_at > body_size) {
      std::fprintf(stderr, "roundLayout pointed outside the head or the body\n");
      __builtin_trap();
    }
    phalanx::net::v1::RoundMessage direct;
    if (!direct.ParseFromArray(data + layout->fields_at, int(layout->fields_size))) continue;
    if (body_size != size) continue;  // the rest of the payload would come from the socket
    direct.set_payload(reinterpret_cast<const char*>(data + layout->payload_at),
                       size - layout->payload_at);
    if (phalanx::net::validRound(direct)) decodePayload(direct.payload());
  }
  // As a bare compressed message.
  decodePayload(std::string(reinterpret_cast<const char*>(data), size));
  // As a fault command: what parses has a text that parses back to the same command.
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const auto command = phalanx::node::parseFaultCommand(text)) {
    const std::string again = phalanx::node::faultText(*command);
    const auto reparsed = phalanx::node::parseFaultCommand(again);
    if (!reparsed || phalanx::node::faultText(*reparsed) != again) {
      std::fprintf(stderr, "fault command '%s' does not parse back from its text\n", again.c_str());
      __builtin_trap();
    }
  }
  return 0;
}
