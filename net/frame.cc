#include "net/frame.h"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>

#include "base/bytes.h"
#include "net/signing.h"

namespace phalanx::net {
namespace {

constexpr std::size_t kEnvelopeOverhead = 4096;  // round, sender, sequence, tags, slack
constexpr std::size_t kMaxIdBytes = 256;         // cluster_id
constexpr std::size_t kMaxDigestBytes = 64;
constexpr std::size_t kMaxFeatures = 64;
constexpr std::size_t kMaxDetailBytes = 1024;
constexpr int kMaxDigestEntries = 4096;          // one per neighbour of the reporter
constexpr std::size_t kMaxSignatureBytes = 132;  // r || s of P-521; P-256 and Ed25519 take 64

bool validHello(const v1::Hello& h) {
  if (h.cluster_id().size() > kMaxIdBytes || h.config_digest().size() > kMaxDigestBytes)
    return false;
  if (std::size_t(h.features_size()) > kMaxFeatures) return false;
  return std::all_of(h.features().begin(), h.features().end(),
                     [](const std::string& f) { return f.size() <= kMaxIdBytes; });
}

}  // namespace

bool validRound(const v1::RoundMessage& m) {
  return v1::RoundMessage::Kind_IsValid(m.kind()) &&
         m.kind() != v1::RoundMessage::KIND_UNSPECIFIED && m.codec() <= 255 &&
         m.signature().size() <= kMaxSignatureBytes &&
         (m.digest().empty() || m.digest().size() == kDigestBytes);
}

bool validDigest(const v1::RoundDigest& d) {
  const int n = d.senders_size();
  if (n != d.hashes_size() || n > kMaxDigestEntries) return false;
  if (d.signatures_size() != 0 && d.signatures_size() != n) return false;
  const auto small = [](const std::string& s) { return s.size() <= kMaxSignatureBytes; };
  const auto digest = [](const std::string& s) { return s.size() == kDigestBytes; };
  if (!std::all_of(d.signatures().begin(), d.signatures().end(), small) ||
      !std::all_of(d.hashes().begin(), d.hashes().end(), digest)) {
    return false;
  }
  if (!d.has_proof()) return true;
  const auto& p = d.proof();
  return small(p.signature_a()) && small(p.signature_b()) && digest(p.digest_a()) &&
         digest(p.digest_b());
}

std::size_t maxFrameBytes(std::uint64_t dim) { return std::size_t(8 * dim) + kEnvelopeOverhead; }

void appendFrame(const v1::Envelope& envelope, std::vector<std::uint8_t>& out) {
  const std::size_t n = envelope.ByteSizeLong();
  const std::size_t at = out.size();
  out.resize(at + kLengthBytes + n);
  base::storeLittle(n, std::span(out).subspan(at), kLengthBytes);
  envelope.SerializeWithCachedSizesToArray(out.data() + at + kLengthBytes);
}

std::vector<std::uint8_t> encodeFrame(const v1::Envelope& envelope) {
  std::vector<std::uint8_t> out;
  appendFrame(envelope, out);
  return out;
}

std::expected<std::uint32_t, FrameError> readLength(
    std::span<const std::uint8_t, kLengthBytes> prefix, std::size_t max_body) {
  const auto n = std::uint32_t(base::loadLittle(prefix, kLengthBytes));
  if (n == 0) return std::unexpected(FrameError::kEmpty);
  if (n > max_body) return std::unexpected(FrameError::kOversized);
  return n;
}

std::expected<void, FrameError> parseBodyInto(std::span<const std::uint8_t> body, v1::Envelope& e) {
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
      if (!v1::Goodbye::Reason_IsValid(e.goodbye().reason()) ||
          e.goodbye().detail().size() > kMaxDetailBytes) {
        return std::unexpected(FrameError::kInvalid);
      }
      break;
    case v1::Envelope::kRound:
      if (!validRound(e.round())) return std::unexpected(FrameError::kInvalid);
      break;
    case v1::Envelope::kDigest:
      if (!validDigest(e.digest())) return std::unexpected(FrameError::kInvalid);
      break;
    case v1::Envelope::kCoalition:
      if (e.coalition().count() > kMaxDigestEntries) return std::unexpected(FrameError::kInvalid);
      break;
    case v1::Envelope::kResync:
    case v1::Envelope::kHeartbeat:
      break;
  }
  return {};
}

namespace {

namespace pbio = google::protobuf::io;

constexpr std::uint32_t kRoundTag = (3 << 3) | 2;    // Envelope.round, length-delimited
constexpr std::uint32_t kPayloadTag = (6 << 3) | 2;  // RoundMessage.payload, length-delimited

pbio::CodedInputStream reader(std::span<const std::uint8_t> bytes) {
  return pbio::CodedInputStream(bytes.data(), int(std::min<std::size_t>(bytes.size(), INT32_MAX)));
}

// Where the RoundMessage starts when a body of `body_size` bytes, of which `bytes` is the
// beginning, is exactly one Envelope.round field; nullopt for any other shape.
std::optional<std::size_t> roundStart(pbio::CodedInputStream& in, std::size_t body_size) {
  std::uint64_t length = 0;
  if (in.ReadTag() != kRoundTag || !in.ReadVarint64(&length)) return std::nullopt;
  const std::size_t at = std::size_t(in.CurrentPosition());
  if (at + length != body_size) return std::nullopt;  // more fields follow: the general path
  return at;
}

}  // namespace

std::expected<bool, FrameError> parseRoundInto(std::span<const std::uint8_t> body,
                                               v1::RoundMessage& out) {
  auto in = reader(body);
  const auto at = roundStart(in, body.size());
  if (!at) return false;
  if (!out.ParseFromArray(body.data() + *at, int(body.size() - *at)))
    return std::unexpected(FrameError::kMalformed);
  if (!validRound(out)) return std::unexpected(FrameError::kInvalid);
  return true;
}

std::optional<RoundLayout> roundLayout(std::span<const std::uint8_t> head, std::size_t body_size) {
  auto in = reader(head);
  const auto fields_at = roundStart(in, body_size);
  if (!fields_at) return std::nullopt;
  while (true) {
    const std::size_t field_start = std::size_t(in.CurrentPosition());
    const std::uint32_t tag = in.ReadTag();  // 0 at the end of `head`
    std::uint64_t value = 0;
    if (tag == kPayloadTag) {  // the payload: must run exactly to the end of the body
      if (!in.ReadVarint64(&value) || std::size_t(in.CurrentPosition()) + value != body_size)
        return std::nullopt;
      return RoundLayout{*fields_at, field_start - *fields_at, std::size_t(in.CurrentPosition())};
    }
    // Before it only the varint fields 1..5, shift_step (fixed32), the signature and the
    // digest (short length-delimited fields).
    const std::uint32_t field = tag >> 3, wire = tag & 7;
    if (field >= 1 && field <= 5 && wire == 0) {
      if (!in.ReadVarint64(&value)) return std::nullopt;
    } else if (field == 7 && wire == 5) {
      std::uint32_t fixed = 0;
      if (!in.ReadLittleEndian32(&fixed)) return std::nullopt;
    } else if ((field == 9 || field == 10) && wire == 2) {
      const std::uint64_t most = field == 9 ? kMaxSignatureBytes : kDigestBytes;
      if (!in.ReadVarint64(&value) || value > most || !in.Skip(int(value))) return std::nullopt;
    } else {
      return std::nullopt;
    }
  }
}

std::expected<v1::Envelope, FrameError> parseBody(std::span<const std::uint8_t> body) {
  v1::Envelope e;
  if (auto parsed = parseBodyInto(body, e); !parsed) return std::unexpected(parsed.error());
  return e;
}

void appendRoundFrameHead(const v1::RoundMessage& header, std::size_t payload_bytes,
                          std::vector<std::uint8_t>& head) {
  using pbio::CodedOutputStream;
  const auto varint = [&head](std::uint64_t v) {
    const std::size_t at = head.size();
    head.resize(at + CodedOutputStream::VarintSize64(v));
    CodedOutputStream::WriteVarint64ToArray(v, head.data() + at);
  };
  const std::size_t fields = header.ByteSizeLong();  // header.payload() must be empty
  const std::size_t message =
      fields +
      (payload_bytes ? 1 + CodedOutputStream::VarintSize64(payload_bytes) + payload_bytes : 0);
  const std::size_t body = 1 + CodedOutputStream::VarintSize64(message) + message;
  head.resize(head.size() + kLengthBytes);
  base::storeLittle(body, std::span(head).last(kLengthBytes), kLengthBytes);
  head.push_back(std::uint8_t(kRoundTag));
  varint(message);
  const std::size_t at = head.size();
  head.resize(at + fields);
  header.SerializeWithCachedSizesToArray(head.data() + at);
  if (payload_bytes) {
    head.push_back(std::uint8_t(kPayloadTag));
    varint(payload_bytes);
  }
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

std::expected<bool, FrameError> FrameReader::next(v1::Envelope& out) {
  if (failed_) return std::unexpected(*failed_);
  if (buffered() < kLengthBytes) return false;
  const std::span<const std::uint8_t, kLengthBytes> prefix(buffer_.data() + consumed_,
                                                           kLengthBytes);
  const auto length = readLength(prefix, max_body_);
  if (!length) {
    failed_ = length.error();
    return std::unexpected(*failed_);
  }
  if (buffered() < kLengthBytes + *length) return false;
  const std::span<const std::uint8_t> body(buffer_.data() + consumed_ + kLengthBytes, *length);
  consumed_ += kLengthBytes + *length;
  if (auto parsed = parseBodyInto(body, out); !parsed) {
    failed_ = parsed.error();
    return std::unexpected(*failed_);
  }
  return true;
}

}  // namespace phalanx::net
