#include "node/exchange/replicas.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "compress/decode.h"

namespace phalanx::node {

std::expected<std::vector<std::uint8_t>, std::string> PublicReplica::encodeDelta(
    std::span<const float> y, compress::Compressor& codec, float shift) {
  if (y.size() != replica_.size()) {
    return std::unexpected(
        fmt::format("replica: vector of {} for a replica of {}", y.size(), replica_.size()));
  }
  difference_.resize(y.size());
  double before = 0;  // ‖y − ŷ‖², for contraction()
  for (std::size_t i = 0; i < y.size(); ++i) {
    difference_[i] = y[i] - replica_[i];
    before += double(difference_[i]) * double(difference_[i]);
  }
  compress::Encoded q;
  if (auto ok = codec.encode(difference_, q); !ok) return std::unexpected(ok.error());
  // The sender applies its own message through the receivers' decoder: same bits both sides.
  if (shift != 1.0f) {
    published_ = replica_;
    if (auto ok = compress::decodeAdd(q.bytes, 1.0f, published_); !ok)
      return std::unexpected(ok.error());
  }
  if (auto ok = compress::decodeAdd(q.bytes, shift, replica_); !ok) {
    return std::unexpected(ok.error());
  }
  shifted_ = shift != 1.0f;
  double after = 0;
  const std::span<const float> sent = published();
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double e = double(y[i]) - double(sent[i]);
    after += e * e;
  }
  residual_ = std::sqrt(before);
  contraction_ = before > 0 ? 1.0 - after / before : std::numeric_limits<double>::quiet_NaN();
  return std::move(q.bytes);
}

std::vector<std::uint8_t> encodeDense(std::span<const float> values) {
  compress::CompressorConfig none;
  none.codec = compress::CodecId::kNone;
  auto codec = compress::makeCompressor(none);
  compress::Encoded out;
  // The codec refuses non-finite values; an attacker's NaN or Inf must still reach the wire
  // (the receivers' decoders are what refuse it), so encode zeros and lay the values over
  // them: the layout is the header, then the fp32 values.
  const std::vector<float> zeros(values.size(), 0.0f);
  (void)(*codec)->encode(zeros, out);
  if (!values.empty()) {
    std::memcpy(out.bytes.data() + out.bytes.size() - values.size() * sizeof(float), values.data(),
                values.size() * sizeof(float));
  }
  return std::move(out.bytes);
}

std::vector<std::uint8_t> PublicReplica::keyframe() const { return encodeDense(replica_); }

void PublicReplica::reset(std::span<const float> values) {
  replica_.assign(values.begin(), values.end());
  shifted_ = false;
}

ReplicaTable::Entry& ReplicaTable::entry(PeerId peer) {
  auto& e = entries_[peer];
  if (e.values.size() != dim_) e.values.assign(dim_, 0.0f);
  return e;
}

ReplicaTable::Result ReplicaTable::applyDelta(PeerId peer, std::uint64_t sequence,
                                              std::span<const std::uint8_t> payload, float shift) {
  Entry& e = entry(peer);
  if (sequence <= e.last_sequence) return {Outcome::kStale, ""};
  if (!e.valid || sequence != e.last_sequence + 1) {
    e.valid = false;
    return {Outcome::kGap, ""};
  }
  if (!(shift > 0.0f && shift <= 1.0f)) {  // NaN too
    e.valid = false;
    return {Outcome::kInvalid, fmt::format("shift step {} outside (0, 1]", shift)};
  }
  if (shift != 1.0f) {
    e.published = e.values;
    if (auto ok = compress::decodeAdd(payload, 1.0f, e.published); !ok) {
      e.valid = false;
      return {Outcome::kInvalid, ok.error()};
    }
  }
  if (auto ok = compress::decodeAdd(payload, shift, e.values); !ok) {
    e.valid = false;  // the sender's replica took a delta we could not: ours is stale now
    return {Outcome::kInvalid, ok.error()};
  }
  e.shifted = shift != 1.0f;
  e.last_sequence = sequence;
  return {Outcome::kApplied, ""};
}

ReplicaTable::Result ReplicaTable::applyKeyframe(PeerId peer, std::uint64_t sequence,
                                                 std::span<const std::uint8_t> payload) {
  Entry& e = entry(peer);
  if (sequence <= e.last_sequence && e.valid) return {Outcome::kStale, ""};
  const auto header = compress::readHeader(payload);
  if (!header || header->codec != compress::CodecId::kNone) {
    e.valid = false;
    return {Outcome::kInvalid, header ? "keyframe: not an uncompressed (fp32) message"
                                      : "keyframe: " + header.error()};
  }
  if (auto ok = compress::decode(payload, e.values); !ok) {
    e.valid = false;
    return {Outcome::kInvalid, ok.error()};
  }
  e.last_sequence = sequence;
  e.valid = true;
  e.shifted = false;
  return {Outcome::kApplied, ""};
}

bool ReplicaTable::valid(PeerId peer) const {
  const auto it = entries_.find(peer);
  return it != entries_.end() && it->second.valid;
}

std::span<const float> ReplicaTable::replica(PeerId peer) const {
  const auto it = entries_.find(peer);
  if (it == entries_.end()) return {};
  return it->second.shifted ? it->second.published : it->second.values;
}

std::uint64_t ReplicaTable::lastSequence(PeerId peer) const {
  const auto it = entries_.find(peer);
  return it == entries_.end() ? 0 : it->second.last_sequence;
}

void ReplicaTable::invalidate(PeerId peer) { entries_[peer].valid = false; }

}  // namespace phalanx::node
