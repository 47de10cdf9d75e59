#include "node/exchange/replicas.h"

#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "compress/decode.h"

namespace phalanx::node {

namespace {

// A dense message's values, in its buffer (compress::viewDense's layout: the header, then fp32).
std::span<float> valuesIn(std::vector<std::uint8_t>& frame, std::size_t dim) {
  return {reinterpret_cast<float*>(frame.data() + compress::kHeaderBytes), dim};
}

}  // namespace

PublicReplica::PublicReplica(std::size_t dim)
    : dim_(dim),
      frame_(
          std::make_shared<std::vector<std::uint8_t>>(encodeDense(std::vector<float>(dim, 0.0f)))) {
}

std::span<const float> PublicReplica::values() const { return valuesIn(*frame_, dim_); }

bool PublicReplica::alone(const std::shared_ptr<std::vector<std::uint8_t>>& frame) {
  if (!frame || frame.use_count() != 1) return false;
  // The last holder let go on another thread: its reads happen before our writes.
  std::atomic_thread_fence(std::memory_order_acquire);
  return true;
}

void PublicReplica::moveToSpare(bool keep_values) {
  if (alone(spare_)) {
    if (keep_values) std::copy(frame_->begin(), frame_->end(), spare_->begin());
    std::swap(frame_, spare_);
    return;
  }
  // Both held elsewhere (rare once receivers keep up): a new buffer, header and values.
  spare_ = std::exchange(frame_, std::make_shared<std::vector<std::uint8_t>>(*frame_));
}

std::span<float> PublicReplica::writable() {
  if (!alone(frame_)) moveToSpare(true);
  return valuesIn(*frame_, dim_);
}

std::expected<std::vector<std::uint8_t>, std::string> PublicReplica::encodeDelta(
    std::span<const float> y, compress::Compressor& codec, float shift) {
  if (y.size() != dim_) {
    return std::unexpected(
        fmt::format("replica: vector of {} for a replica of {}", y.size(), dim_));
  }
  const std::span<const float> replica = values();
  difference_.resize(y.size());
  double before = 0;  // ‖y − ŷ‖², for contraction()
  for (std::size_t i = 0; i < y.size(); ++i) {
    difference_[i] = y[i] - replica[i];
    before += double(difference_[i]) * double(difference_[i]);
  }
  compress::Encoded q;
  if (auto ok = codec.encode(difference_, q); !ok) return std::unexpected(ok.error());
  // The sender applies its own message through the receivers' decoder: same bits both sides.
  if (shift != 1.0f) {
    published_.assign(replica.begin(), replica.end());
    if (auto ok = compress::decodeAdd(q.bytes, 1.0f, published_); !ok)
      return std::unexpected(ok.error());
  }
  if (auto ok = compress::decodeAdd(q.bytes, shift, writable()); !ok) {
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

void PublicReplica::reset(std::span<const float> values) {
  if (values.size() != dim_) {
    throw std::invalid_argument(
        fmt::format("replica: reset with {} values for a replica of {}", values.size(), dim_));
  }
  if (!alone(frame_)) moveToSpare(false);
  std::copy(values.begin(), values.end(), valuesIn(*frame_, dim_).begin());
  shifted_ = false;
}

std::vector<float>& ReplicaTable::ownValues(Entry& e) {
  if (e.frame) {
    e.values.assign(e.frame_values.begin(), e.frame_values.end());
    e.frame.reset();
    e.frame_values = {};
  } else if (e.values.size() != dim_) {
    e.values.assign(dim_, 0.0f);
  }
  return e.values;
}

ReplicaTable::Result ReplicaTable::applyDelta(PeerId peer, std::uint64_t sequence,
                                              std::span<const std::uint8_t> payload, float shift) {
  Entry& e = entries_[peer];
  if (!e.frame) ownValues(e);  // a replica heard of starts at zero
  if (sequence <= e.last_sequence) return {Outcome::kStale, ""};
  if (!e.valid || sequence != e.last_sequence + 1) {
    e.valid = false;
    return {Outcome::kGap, ""};
  }
  if (!(shift > 0.0f && shift <= 1.0f)) {  // NaN too
    e.valid = false;
    return {Outcome::kInvalid, fmt::format("shift step {} outside (0, 1]", shift)};
  }
  std::vector<float>& values = ownValues(e);
  if (shift != 1.0f) {
    e.published = values;
    if (auto ok = compress::decodeAdd(payload, 1.0f, e.published); !ok) {
      e.valid = false;
      return {Outcome::kInvalid, ok.error()};
    }
  }
  if (auto ok = compress::decodeAdd(payload, shift, values); !ok) {
    e.valid = false;  // the sender's replica took a delta we could not: ours is stale now
    return {Outcome::kInvalid, ok.error()};
  }
  e.shifted = shift != 1.0f;
  e.last_sequence = sequence;
  return {Outcome::kApplied, ""};
}

ReplicaTable::Result ReplicaTable::applyKeyframe(PeerId peer, std::uint64_t sequence,
                                                 const net::Payload& frame,
                                                 net::PayloadChecks* checks) {
  Entry& e = entries_[peer];
  if (sequence <= e.last_sequence && e.valid) return {Outcome::kStale, ""};
  const std::span<const std::uint8_t> payload =
      frame ? std::span<const std::uint8_t>(*frame) : std::span<const std::uint8_t>();
  if (const auto view =
          compress::viewDense(payload, dim_, checks ? &checks->finite_floats : nullptr)) {
    e.frame = frame;
    e.frame_values = *view;
    e.values = {};
    e.last_sequence = sequence;
    e.valid = true;
    e.shifted = false;
    return {Outcome::kApplied, ""};
  }
  // Not viewable (a bad or misaligned keyframe): decoded into values of the replica's own,
  // which keep what it held when the keyframe is refused.
  std::vector<float>& values = ownValues(e);
  const auto header = compress::readHeader(payload);
  if (!header || header->codec != compress::CodecId::kNone) {
    e.valid = false;
    return {Outcome::kInvalid, header ? "keyframe: not an uncompressed (fp32) message"
                                      : "keyframe: " + header.error()};
  }
  if (auto ok = compress::decode(payload, values); !ok) {
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
  const Entry& e = it->second;
  if (e.shifted) return e.published;
  if (e.frame) return e.frame_values;
  return e.values;
}

std::uint64_t ReplicaTable::lastSequence(PeerId peer) const {
  const auto it = entries_.find(peer);
  return it == entries_.end() ? 0 : it->second.last_sequence;
}

void ReplicaTable::invalidate(PeerId peer) { entries_[peer].valid = false; }

}  // namespace phalanx::node
