// One TCP (or TLS) connection of a TcpTransport, from the handshake to its close: its reads
// (frames, large round payloads read in place), its write queue, the Hello check, and what its
// frames mean once it is open (net/transport.h's dispatch). Lives on the transport's io_context.
#pragma once

#include <array>
#include <asio.hpp>
#include <asio/ssl.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/frame.h"
#include "net/tcp_transport.h"

namespace phalanx::net {

class TcpTransport::Session : public std::enable_shared_from_this<Session> {
 public:
  // expected_peer: the neighbour we dialled, or nullopt for an accepted connection.
  Session(TcpTransport& owner, asio::ip::tcp::socket socket,
          std::optional<std::uint32_t> expected_peer);

  void start();

 private:
  // Runs f on the byte stream: the TLS stream, or the bare socket under it.
  template <typename F>
  void onStream(F&& f) {
    if (tls_) {
      f(*tls_stream_);
    } else {
      f(socket_);
    }
  }

  void begin() {
    enqueue(helloFor(owner_.config_), /*force=*/true);
    readHeader();
  }

 public:
  bool enqueue(const v1::Envelope& envelope, bool force = false);

  bool enqueueRound(const v1::RoundMessage& header, TcpTransport::Payload payload);

  // Sends Goodbye and closes once the queue is written. A duplicate connection is closed
  // gracefully in both directions instead: after the Goodbye only our sending half shuts, and
  // we keep reading (and delivering) until the peer, having flushed what it had queued on this
  // connection, closes its half — so a dial race loses no frame.
  void goodbyeAndClose(v1::Goodbye::Reason reason, std::string detail);

  // The peer said it keeps another connection: stop taking frames here, write what is queued
  // (the peer reads until we close), then close.
  void retire();

  void close(std::string_view why);

  // Closes the socket without telling the owner (the owner is tearing down).
  void drop();

  std::uint32_t peer() const { return peer_; }
  const asio::ip::address& remote() const { return remote_; }
  bool isOpen() const { return state_ == State::kOpen; }
  bool initiated() const { return initiated_; }
  std::chrono::steady_clock::time_point lastReceived() const { return last_received_; }
  // Bytes the kernel holds for us that no read has taken yet: a loop busy elsewhere (a big mix,
  // a starved thread) has not got to them, which is no sign the peer went quiet.
  bool bytesWaiting() const {
    asio::error_code ec;
    return socket_.available(ec) > 0 && !ec;
  }

 private:
  bool usable() const { return !alive_.expired() && state_ != State::kClosed; }
  // The Hello was accepted (the session is open, or closing after it was).
  bool opened() const {
    return state_ == State::kOpen || state_ == State::kClosing || state_ == State::kDraining;
  }
  // A Goodbye or the peer's is being written out; nothing more may be queued.
  bool closing() const {
    return state_ == State::kRefusing || state_ == State::kClosing || state_ == State::kDraining;
  }

  PeerStats* stats() { return opened() || initiated_ ? &owner_.stats_.peers[peer_] : nullptr; }

  void readHeader();

  // Large frames: read the first bytes, and when they show the usual round layout, read the
  // payload straight into a buffer the receivers then share — no staging buffer, no copy.
  void readHead();

  // The rest of a large round frame, straight into payload_ (a buffer of the pool).
  void readPayload(std::size_t payload_at);

  void payloadRead() {
    if (!validRound(round_in_)) return refuse(FrameError::kInvalid);
    roundReceived(pending_);
  }

  // A payload buffer nobody else holds any more (the receivers' replicas have let it go), or a
  // new one: a model-sized frame per round then costs no allocation and no fresh pages once
  // the pool has its few buffers.
  std::shared_ptr<std::vector<std::uint8_t>> pooledPayload();

  // Reads the rest of a `size`-byte body (from `from` on) into body_, then parses and
  // dispatches it.
  void readBody(std::size_t from, std::size_t size) {
    readChunks(Sink::kBody, from, size, &Session::bodyRead);
  }

  void bodyRead();

  // Where a frame's bytes go: body_, or payload_ (a large round message's payload).
  enum class Sink : std::uint8_t { kBody, kPayload };
  // Bytes [from, size) of a frame into `sink`, in chunks that each count as a sign of life: a
  // 100 MB model frame takes longer than the liveness timeout on a busy link, and the
  // heartbeats queue behind it. The buffer grows with the bytes that came, never ahead of
  // them: a chunk is at most what has arrived so far (at least kFirstChunk), so a declared
  // length alone allocates nothing.
  void readChunks(Sink sink, std::size_t from, std::size_t size, void (Session::*done)());
  // The sink's storage, at least `bytes` long (what it held kept).
  char* grow(Sink sink, std::size_t bytes);

  void readNext() {
    if (usable() && (!closing() || state_ == State::kDraining)) readHeader();
  }

  // A whole round frame is in round_in_ (and a large one's payload in payload_).
  void roundReceived(std::size_t body_bytes);

  void readFailed(const asio::error_code& ec, const char* at_eof) {
    close(ec == asio::error::eof ? std::string(at_eof) : ec.message());
  }

  // A frame that breaks the format: counted, and the connection closed (framing is lost).
  void refuse(FrameError e);

  void failHandshake(Refusal reason) {
    owner_.reject(reason);
    ++owner_.stats_.handshake_failures;
  }

  void dispatch(v1::Envelope& e, std::size_t bytes);

  // Whether frames read here speak for peer_. With TLS, any connection whose certificate names
  // it (frames still arriving on a duplicate being closed are as genuine as the others). Without
  // TLS a Hello proves nothing, so only the pair's connection speaks: a connection refused as a
  // duplicate, or replaced, delivers nothing (an honest dial race then costs a resync at most).
  bool speaksForPeer() const {
    if (!owner_.open_.contains(peer_)) return false;
    return certificate_id_.has_value() || owner_.open_.at(peer_).get() == this;
  }

  void deliver(v1::RoundMessage& m, Payload payload = nullptr);

  void account(std::size_t bytes);

  // One frame to write: `head`, then the shared payload's bytes (if any).
  struct Outgoing {
    std::vector<std::uint8_t> head;
    TcpTransport::Payload payload;
    std::size_t size() const { return head.size() + (payload ? payload->size() : 0); }
  };

  // Head buffers are recycled: fresh large buffers cost page faults on every message.
  std::vector<std::uint8_t> spareHead();

  bool push(Outgoing out, bool force);

  // Everything queued is written and the session is closing.
  void flushed();

  void writeNext();

  TcpTransport& owner_;
  std::weak_ptr<bool> alive_;
  asio::ip::tcp::socket socket_;
  std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket&>> tls_stream_;  // with TLS only
  bool tls_;
  std::optional<std::uint32_t> certificate_id_;  // from the peer's certificate (TLS)
  asio::steady_timer timer_;
  bool initiated_;
  std::uint32_t peer_;
  asio::ip::address remote_;
  // handshake (TLS, then the peers' Hellos) -> open -> closing (our Goodbye or the peer's
  // queued; closed once written) or draining (a duplicate: after our Goodbye only the sending
  // half shuts, and it reads on until the peer closes) -> closed. A Hello refused: refusing (the
  // Goodbye written, then closed).
  enum class State : std::uint8_t { kHandshake, kOpen, kRefusing, kClosing, kDraining, kClosed };
  State state_ = State::kHandshake;
  bool writing_ = false;  // a write in flight (at most one)
  std::array<std::uint8_t, kLengthBytes> header_{};
  std::vector<std::uint8_t> body_;
  static constexpr std::size_t kDirectMin = 64u << 10;  // frames this large take readHead()
  static constexpr std::size_t kReadChunk = 1u << 20;   // a large body's reads, each a sign of life
  static constexpr std::size_t kFirstChunk = 4u << 10;  // a body's first read, at most
  std::array<std::uint8_t, 256> head_{};                // the header with a signature and a digest
  std::size_t pending_ = 0;                             // the large frame's body size
  std::deque<Outgoing> queue_;
  std::vector<std::vector<std::uint8_t>> spare_;
  v1::Envelope incoming_;      // parsed into again and again: its buffers are reused
  v1::RoundMessage round_in_;  // the same for the round fast path (a oneof would free it)
  // The large round frame being read: its payload, handed to the receivers as it is. Its
  // size is what arrived so far (a recycled buffer keeps its capacity, and its size when a
  // frame of the same size follows, so nothing is zeroed or faulted in again).
  std::shared_ptr<std::vector<std::uint8_t>> payload_;
  std::size_t payload_bytes_ = 0;  // its length on the wire
  std::vector<std::shared_ptr<std::vector<std::uint8_t>>> payload_pool_;
  static constexpr std::size_t kPayloadPool = 4;  // a replica's keyframe, the frame being read
  std::size_t queued_bytes_ = 0;
  std::chrono::steady_clock::time_point last_received_;
};

}  // namespace phalanx::net
