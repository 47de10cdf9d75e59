#include "net/frame.h"

#include <algorithm>

namespace phalanx::net {
namespace {

constexpr std::size_t kEnvelopeOverhead = 4096;  // round, sender, sequence, tags, slack
constexpr std::size_t kMaxIdBytes = 256;         // cluster_id
constexpr std::size_t kMaxDigestBytes = 64;
constexpr std::size_t kMaxFeatures = 64;
constexpr std::size_t kMaxDetailBytes = 1024;

bool validRoundMessage(const v1::RoundMessage& m) {
  return v1::RoundMessage::Kind_IsValid(m.kind()) && m.kind() != v1::RoundMessage::KIND_UNSPECIFIED &&
         m.codec() <= 255;
}

bool validHello(const v1::Hello& h) {
  if (h.cluster_id().size() > kMaxIdBytes || h.config_digest().size() > kMaxDigestBytes) return false;
  if (std::size_t(h.features_size()) > kMaxFeatures) return false;
  return std::all_of(h.features().begin(), h.features().end(),
                     [](const std::string& f) { return f.size() <= kMaxIdBytes; });
}

}  // namespace

std::size_t maxFrameBytes(std::uint64_t dim) { return std::size_t(8 * dim) + kEnvelopeOverhead; }

std::string_view frameErrorName(FrameError e) {
  switch (e) {
    case FrameError::kEmpty:
      return "empty";
    case FrameError::kOversized:
      return "oversized";
    case FrameError::kMalformed:
      return "malformed";
    case FrameError::kNoBody:
      return "no_body";
    case FrameError::kInvalid:
      return "invalid";
  }
  return "unknown";
}

void appendFrame(const v1::Envelope& envelope, std::vector<std::uint8_t>& out) {
  const std::size_t n = envelope.ByteSizeLong();
  const std::size_t at = out.size();
  out.resize(at + kLengthBytes + n);
  for (std::size_t b = 0; b < kLengthBytes; ++b) out[at + b] = std::uint8_t(n >> (8 * b));
  envelope.SerializeWithCachedSizesToArray(out.data() + at + kLengthBytes);
}

std::vector<std::uint8_t> encodeFrame(const v1::Envelope& envelope) {
  std::vector<std::uint8_t> out;
  appendFrame(envelope, out);
  return out;
}

std::expected<std::uint32_t, FrameError> readLength(std::span<const std::uint8_t, kLengthBytes> prefix,
                                                    std::size_t max_body) {
  std::uint32_t n = 0;
  for (std::size_t b = 0; b < kLengthBytes; ++b) n |= std::uint32_t(prefix[b]) << (8 * b);
  if (n == 0) return std::unexpected(FrameError::kEmpty);
  if (n > max_body) return std::unexpected(FrameError::kOversized);
  return n;
}

std::expected<v1::Envelope, FrameError> parseBody(std::span<const std::uint8_t> body) {
  v1::Envelope e;
  if (body.size() > std::size_t(INT32_MAX) || !e.ParseFromArray(body.data(), int(body.size()))) {
    return std::unexpected(FrameError::kMalformed);
  }
  switch (e.body_case()) {
    case v1::Envelope::BODY_NOT_SET:
      return std::unexpected(FrameError::kNoBody);
    case v1::Envelope::kHello:
      if (!validHello(e.hello())) return std::unexpected(FrameError::kInvalid);
      break;
    case v1::Envelope::kGoodbye:
      if (!v1::Goodbye::Reason_IsValid(e.goodbye().reason()) || e.goodbye().detail().size() > kMaxDetailBytes) {
        return std::unexpected(FrameError::kInvalid);
      }
      break;
    case v1::Envelope::kRound:
      if (!validRoundMessage(e.round())) return std::unexpected(FrameError::kInvalid);
      break;
    case v1::Envelope::kResync:
    case v1::Envelope::kHeartbeat:
      break;
  }
  return e;
}

void FrameReader::feed(std::span<const std::uint8_t> bytes) {
  if (failed_) return;
  // Drop what was consumed before growing, so the buffer stays near one frame in size.
  if (consumed_ > 0 && consumed_ * 2 >= buffer_.size()) {
    buffer_.erase(buffer_.begin(), buffer_.begin() + std::ptrdiff_t(consumed_));
    consumed_ = 0;
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

std::optional<std::expected<v1::Envelope, FrameError>> FrameReader::next() {
  if (failed_) return std::unexpected(*failed_);
  if (buffered() < kLengthBytes) return std::nullopt;
  const std::span<const std::uint8_t, kLengthBytes> prefix(buffer_.data() + consumed_, kLengthBytes);
  const auto length = readLength(prefix, max_body_);
  if (!length) {
    failed_ = length.error();
    return std::unexpected(*failed_);
  }
  if (buffered() < kLengthBytes + *length) return std::nullopt;
  const std::span<const std::uint8_t> body(buffer_.data() + consumed_ + kLengthBytes, *length);
  consumed_ += kLengthBytes + *length;
  auto envelope = parseBody(body);
  if (!envelope) failed_ = envelope.error();
  return envelope;
}

}  // namespace phalanx::net
