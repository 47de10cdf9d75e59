#include "net/tcp_session.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "net/tls.h"

namespace phalanx::net {

using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

TcpTransport::Session::Session(TcpTransport& owner, tcp::socket socket,
                               std::optional<std::uint32_t> expected_peer)
    : owner_(owner),
      alive_(owner.alive_),
      socket_(std::move(socket)),
      tls_(owner.config_.tls.enabled),
      timer_(owner.io_),
      initiated_(expected_peer.has_value()),
      peer_(expected_peer.value_or(0)),
      last_received_(Clock::now()) {
  // The TLS layer's buffers (two TLS records, about 34 KiB) exist only where TLS runs.
  if (tls_) tls_stream_ = std::make_unique<asio::ssl::stream<tcp::socket&>>(socket_, owner.ssl_);
  asio::error_code ignored;
  remote_ = socket_.remote_endpoint(ignored).address();
}

void TcpTransport::Session::start() {
  // Rounds wait on small frames (headers, resync requests, heartbeats): without this, Nagle
  // holds a small write behind the peer's delayed ACK, 40 ms on Linux.
  asio::error_code ignored;
  socket_.set_option(tcp::no_delay(true), ignored);
  timer_.expires_after(owner_.config_.handshake_timeout);
  timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
    if (ec || !self->usable() || self->opened()) return;
    self->failHandshake(Refusal::kHandshakeTimeout);
    self->close("no Hello before the handshake timeout");
  });
  if (!tls_) return begin();
  tls_stream_->async_handshake(
      initiated_ ? asio::ssl::stream_base::client : asio::ssl::stream_base::server,
      [self = shared_from_this()](const asio::error_code& ec) {
        if (!self->usable()) return;
        if (ec ||
            !(self->certificate_id_ = certificateNodeId(self->tls_stream_->native_handle()))) {
          self->failHandshake(Refusal::kTlsHandshake);
          return self->close(ec ? "TLS handshake: " + ec.message()
                                : std::string("certificate names no node (CN=node-<id>)"));
        }
        self->begin();
      });
}

void TcpTransport::Session::refuse(FrameError e) {
  owner_.reject(refusalOf(e));
  close(fmt::format("bad frame: {}", refusalName(e)));
}

bool TcpTransport::Session::enqueue(const v1::Envelope& envelope, bool force) {
  Outgoing out{.head = spareHead()};
  appendFrame(envelope, out.head);
  return push(std::move(out), force);
}

bool TcpTransport::Session::enqueueRound(const v1::RoundMessage& header,
                                         TcpTransport::Payload payload) {
  Outgoing out{.head = spareHead(), .payload = std::move(payload)};
  appendRoundFrameHead(header, out.payload ? out.payload->size() : 0, out.head);
  return push(std::move(out), false);
}

void TcpTransport::Session::goodbyeAndClose(v1::Goodbye::Reason reason, std::string detail) {
  v1::Envelope bye;
  bye.mutable_goodbye()->set_reason(reason);
  bye.mutable_goodbye()->set_detail(std::move(detail));
  enqueue(bye, /*force=*/true);
  state_ = !opened()                                     ? State::kRefusing
           : reason == v1::Goodbye::DUPLICATE_CONNECTION ? State::kDraining
                                                         : State::kClosing;
  if (state_ == State::kDraining) {  // a bound on how long the peer may take
    timer_.expires_after(owner_.config_.liveness_timeout);
    timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
      if (!ec && self->usable()) self->close("duplicate connection drained too slowly");
    });
  }
  if (!writing_) flushed();
}

void TcpTransport::Session::retire() {
  if (state_ == State::kOpen) state_ = State::kClosing;
  owner_.handOver(shared_from_this());
  if (!writing_ && queue_.empty()) close("Goodbye: duplicate_connection");
}

void TcpTransport::Session::close(std::string_view why) {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  timer_.cancel();
  asio::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  if (!alive_.expired()) owner_.closed(shared_from_this(), why);
}

void TcpTransport::Session::drop() {
  state_ = State::kClosed;
  timer_.cancel();
  asio::error_code ignored;
  socket_.close(ignored);
}

void TcpTransport::Session::readHeader() {
  onStream([&](auto& s) {
    asio::async_read(s, asio::buffer(header_),
                     [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
                       if (!self->usable()) return;
                       if (ec) return self->readFailed(ec, "closed by peer");
                       const auto length =
                           readLength(self->header_,
                                      self->opened() ? maxFrameBytes(self->owner_.config_.model_dim)
                                                     : kMaxHandshakeFrameBytes);
                       if (!length) return self->refuse(length.error());
                       if (self->opened() && *length >= kDirectMin) {
                         self->pending_ = *length;
                         return self->readHead();
                       }
                       self->body_.clear();  // its capacity stays for the next frame
                       self->readBody(0, *length);
                     });
  });
}

void TcpTransport::Session::readHead() {
  onStream([&](auto& s) {
    asio::async_read(
        s, asio::buffer(head_),
        [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
          if (!self->usable()) return;
          if (ec) return self->readFailed(ec, "closed by peer mid-frame");
          const auto layout = roundLayout(self->head_, self->pending_);
          if (!layout) {  // another shape: the general path, with the head already read
            self->body_.assign(self->head_.begin(), self->head_.end());
            return self->readBody(self->head_.size(), self->pending_);
          }
          if (!self->round_in_.ParseFromArray(self->head_.data() + layout->fields_at,
                                              int(layout->fields_size))) {
            return self->refuse(FrameError::kMalformed);
          }
          self->readPayload(layout->payload_at);
        });
  });
}

void TcpTransport::Session::readPayload(std::size_t payload_at) {
  const std::size_t size = pending_ - payload_at;
  const std::size_t have = head_.size() - payload_at;
  payload_ = pooledPayload();
  payload_bytes_ = size;
  std::copy_n(head_.begin() + std::ptrdiff_t(payload_at), have, grow(Sink::kPayload, have));
  readChunks(Sink::kPayload, have, size, &Session::payloadRead);
}

std::shared_ptr<std::vector<std::uint8_t>> TcpTransport::Session::pooledPayload() {
  for (const auto& buffer : payload_pool_) {
    // One owner: the pool. Nobody else can take a new reference to it, so it stays free.
    if (buffer.use_count() == 1) return buffer;
  }
  auto fresh = std::make_shared<std::vector<std::uint8_t>>();
  if (payload_pool_.size() < kPayloadPool) payload_pool_.push_back(fresh);
  return fresh;
}

char* TcpTransport::Session::grow(Sink sink, std::size_t bytes) {
  std::vector<std::uint8_t>& buffer = sink == Sink::kBody ? body_ : *payload_;
  if (buffer.size() < bytes) buffer.resize(bytes);
  return reinterpret_cast<char*>(buffer.data());
}

void TcpTransport::Session::bodyRead() {
  if (opened()) {
    const auto round = parseRoundInto(body_, round_in_);
    if (!round) return refuse(round.error());
    if (*round) return roundReceived(body_.size());
  }
  if (const auto parsed = parseBodyInto(body_, incoming_); !parsed) return refuse(parsed.error());
  last_received_ = Clock::now();
  dispatch(incoming_, kLengthBytes + body_.size());
  readNext();
}

void TcpTransport::Session::readChunks(Sink sink, std::size_t from, std::size_t size,
                                       void (Session::*done)()) {
  const std::size_t chunk = std::min({size - from, kReadChunk, std::max(from, kFirstChunk)});
  char* data = grow(sink, from + chunk);
  onStream([&](auto& s) {
    asio::async_read(s, asio::buffer(data + from, chunk),
                     [self = shared_from_this(), sink, next = from + chunk, size, done](
                         const asio::error_code& ec, std::size_t) {
                       if (!self->usable()) return;
                       if (ec) return self->readFailed(ec, "closed by peer mid-frame");
                       if (next < size) {
                         self->last_received_ = Clock::now();
                         return self->readChunks(sink, next, size, done);
                       }
                       ((*self).*done)();
                     });
  });
}

void TcpTransport::Session::roundReceived(std::size_t body_bytes) {
  last_received_ = Clock::now();
  account(kLengthBytes + body_bytes);
  if (payload_) payload_->resize(payload_bytes_);  // a recycled buffer may be longer
  deliver(round_in_, std::move(payload_));
  readNext();
}

void TcpTransport::Session::dispatch(v1::Envelope& e, std::size_t bytes) {
  if (!opened()) {
    if (e.body_case() != v1::Envelope::kHello) {
      failHandshake(Refusal::kExpectedHello);
      return close("first frame was not a Hello");
    }
    std::string detail;
    auto refusal = checkHello(owner_.config_, e.hello(), detail);
    if (!refusal && certificate_id_ && e.hello().node_id() != *certificate_id_) {
      refusal = v1::Goodbye::IDENTITY_MISMATCH;
      detail = fmt::format("certificate of node {} claims to be node {}", *certificate_id_,
                           e.hello().node_id());
    }
    if (!refusal && initiated_ && e.hello().node_id() != peer_) {
      refusal = v1::Goodbye::UNKNOWN_NODE;
      detail = fmt::format("dialled node {} but node {} answered", peer_, e.hello().node_id());
    }
    if (refusal) {
      spdlog::warn("node {}: refused a connection: {}", owner_.config_.self, detail);
      failHandshake(refusalOf(*refusal));
      return goodbyeAndClose(*refusal, detail);
    }
    peer_ = e.hello().node_id();
    state_ = State::kOpen;
    timer_.cancel();
    account(bytes);
    owner_.adopt(shared_from_this());
    return;
  }
  account(bytes);
  switch (e.body_case()) {
    case v1::Envelope::kRound:
      return deliver(*e.mutable_round());
    case v1::Envelope::kGoodbye:
      if (e.goodbye().reason() == v1::Goodbye::DUPLICATE_CONNECTION) return retire();
      return close(fmt::format("Goodbye: {}", refusalName(e.goodbye().reason())));
    default: {
      // What a connection that does not speak for its peer carries is dropped.
      static const TransportHandlers kNobody;
      if (dispatchEnvelope(speaksForPeer() ? owner_.handlers_ : kNobody, peer_, e)) return;
      owner_.reject(Refusal::kUnexpectedHello);  // a second Hello, or no body at all
      return close("a second Hello");
    }
  }
}

void TcpTransport::Session::deliver(v1::RoundMessage& m, Payload payload) {
  if (m.sender() != peer_) {  // a peer speaking for someone else
    owner_.reject(Refusal::kSenderMismatch);
    return;
  }
  if (!speaksForPeer()) {
    owner_.reject(Refusal::kNotPairConnection);
    return;
  }
  if (!owner_.handlers_.on_round) return;
  // The payload in a buffer of its own (the pool's, or the message's moved into one): the
  // handler keeps it.
  Received received = payload ? Received(std::move(m), std::move(payload)) : Received(std::move(m));
  owner_.handlers_.on_round(peer_, received);
}

void TcpTransport::Session::account(std::size_t bytes) {
  PeerStats& s = owner_.stats_.peers[peer_];
  s.bytes_received += bytes;
  ++s.frames_received;
}

std::vector<std::uint8_t> TcpTransport::Session::spareHead() {
  if (spare_.empty()) return {};
  std::vector<std::uint8_t> v = std::move(spare_.back());
  spare_.pop_back();
  v.clear();
  return v;
}

bool TcpTransport::Session::push(Outgoing out, bool force) {
  if (state_ != State::kHandshake && state_ != State::kOpen) return false;
  if (!force && queued_bytes_ + out.size() > owner_.config_.max_queued_bytes) return false;
  queued_bytes_ += out.size();
  queue_.push_back(std::move(out));
  writeNext();
  return true;
}

void TcpTransport::Session::flushed() {
  if (state_ != State::kDraining) return close("closed after Goodbye");
  asio::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_send, ignored);
}

void TcpTransport::Session::writeNext() {
  if (writing_ || queue_.empty() || state_ == State::kClosed) return;
  writing_ = true;
  const Outgoing& out = queue_.front();
  std::array<asio::const_buffer, 2> buffers{
      asio::buffer(out.head), out.payload ? asio::buffer(*out.payload) : asio::const_buffer()};
  onStream([&](auto& s) {
    asio::async_write(s, buffers,
                      [self = shared_from_this()](const asio::error_code& ec, std::size_t n) {
                        if (!self->usable()) return;
                        self->writing_ = false;
                        if (ec) return self->close(ec.message());
                        if (PeerStats* s = self->stats()) {
                          s->bytes_sent += n;
                          ++s->frames_sent;
                        }
                        Outgoing done = std::move(self->queue_.front());
                        self->queue_.pop_front();
                        self->queued_bytes_ -= done.size();
                        if (self->spare_.size() < 2) self->spare_.push_back(std::move(done.head));
                        if (self->queue_.empty() && self->closing()) return self->flushed();
                        self->writeNext();
                      });
  });
}

}  // namespace phalanx::net
