// Frames on the wire (net/FORMAT.md): a u32 little-endian body length, then one serialized
// v1::Envelope. Every length is checked against the limit before anything is allocated;
// a peer's garbage becomes a FrameError (counted by the transport, which closes that peer),
// never a crash. Pure functions and a value-type reader; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "net/proto/phalanx.pb.h"

namespace phalanx::net {

inline constexpr std::uint32_t kProtocolVersion = 1;
inline constexpr std::size_t kLengthBytes = 4;

// The largest frame body a node of model dimension `dim` accepts: the largest legal
// compressed message for that dimension (compress/FORMAT.md: at most 8 bytes per entry, e.g.
// a sparse message listing every index, plus headers) and the envelope's own fields.
std::size_t maxFrameBytes(std::uint64_t dim);
// The largest frame body a connection may declare before its Hello is verified: a Hello is a few
// hundred bytes, and a body is allocated whole once its length is read, so an outsider's length
// prefix must not choose the allocation (64 sockets × a model-sized claim was half a gigabyte).
inline constexpr std::size_t kMaxHandshakeFrameBytes = 64u << 10;

enum class FrameError : std::uint8_t {
  kEmpty,      // a zero length prefix
  kOversized,  // a length prefix above the limit
  kMalformed,  // the body is not a valid Envelope
  kNoBody,     // a valid Envelope with nothing in it
  kInvalid,    // well-formed, but a field is out of range (unknown kind, huge strings, ...)
};
// Its metric label: net/refusal.h.

// Appends one frame holding `envelope` to `out`.
void appendFrame(const v1::Envelope& envelope, std::vector<std::uint8_t>& out);
std::vector<std::uint8_t> encodeFrame(const v1::Envelope& envelope);

// The body length announced by a frame's first four bytes; refused when 0 or above max_body.
std::expected<std::uint32_t, FrameError> readLength(
    std::span<const std::uint8_t, kLengthBytes> prefix, std::size_t max_body);

// Parses and checks one body (see FORMAT.md "Checks").
std::expected<v1::Envelope, FrameError> parseBody(std::span<const std::uint8_t> body);

// The same into an existing envelope, whose string capacity is reused (a receiver parsing
// 100 MB messages into one envelope does not fault in 100 MB of fresh pages per message).
// On success `out` holds a valid envelope.
std::expected<void, FrameError> parseBodyInto(std::span<const std::uint8_t> body,
                                              v1::Envelope& out);

// The receive fast path for the common frame, a body holding exactly one Envelope.round field:
// parses the RoundMessage into `out`, whose payload capacity survives (a oneof would free
// it). true: `out` holds the checked message; false: the body has another shape (then use
// parseBodyInto); an error when it has this shape but does not parse or pass the checks.
std::expected<bool, FrameError> parseRoundInto(std::span<const std::uint8_t> body,
                                               v1::RoundMessage& out);

// The direct receive path for large frames: when `head`, the first bytes of a body of
// `body_size` bytes, holds an Envelope.round whose fields are all in `head` and whose last
// field is the payload running to the end of the body (what appendRoundFrameHead writes),
// says where the other fields are and where the payload starts, so the payload can be read
// from the socket straight into its string. nullopt for any other shape.
struct RoundLayout {
  std::size_t fields_at = 0, fields_size = 0;  // the RoundMessage's fields before the payload
  std::size_t payload_at = 0;                  // offset of the payload's first byte in the body
};
std::optional<RoundLayout> roundLayout(std::span<const std::uint8_t> head, std::size_t body_size);

// The checks parseBody applies to a RoundMessage and to a RoundDigest.
bool validRound(const v1::RoundMessage& m);
bool validDigest(const v1::RoundDigest& d);

// The frame of an Envelope{round: header + payload} without copying the payload: `head` gets
// the length prefix and every byte before the payload; the payload's bytes follow it on the
// wire. (Protocol Buffers allows the payload field to come last, after the others.)
void appendRoundFrameHead(const v1::RoundMessage& header, std::size_t payload_bytes,
                          std::vector<std::uint8_t>& head);

// Cuts a byte stream into envelopes, for transports that read in chunks, tests and fuzzing.
// After the first error the stream is unusable (framing is lost): the peer must be closed.
class FrameReader {
 public:
  explicit FrameReader(std::size_t max_body) : max_body_(max_body) {}

  void feed(std::span<const std::uint8_t> bytes);

  // true: `out` holds the next envelope; false: more bytes are needed; or the error that ended
  // the stream (every later call returns it again).
  std::expected<bool, FrameError> next(v1::Envelope& out);

  std::size_t buffered() const { return buffer_.size() - consumed_; }

 private:
  std::size_t max_body_;
  std::vector<std::uint8_t> buffer_;
  std::size_t consumed_ = 0;
  std::optional<FrameError> failed_;
};

}  // namespace phalanx::net
