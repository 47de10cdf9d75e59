#include "net/tcp_transport.h"

#include <fmt/format.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <deque>

namespace phalanx::net {
namespace {

using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// A connection flood costs at most this many sockets. At the cap a newcomer evicts the oldest
// pending handshake, so sockets that never speak age out while a neighbour's handshake (one
// round trip) completes; one source address other than a neighbour's holds at most
// kMaxPendingPerAddress of them.
constexpr std::size_t kMaxPendingHandshakes = 64;
constexpr std::size_t kMaxPendingPerAddress = 16;

// A Goodbye reason as a counter label: the schema's enum name in lower case. Unspecified or
// unknown numbers (a hostile peer may send any) count as protocol errors.

}  // namespace

class TcpTransport::Session : public std::enable_shared_from_this<Session> {
 public:
  // expected_peer: the neighbour we dialled, or nullopt for an accepted connection.
  Session(TcpTransport& owner, tcp::socket socket, std::optional<std::uint32_t> expected_peer)
      : owner_(owner),
        alive_(owner.alive_),
        stream_(std::move(socket), owner.ssl_),
        tls_(owner.config_.tls.enabled),
        timer_(owner.io_),
        initiated_(expected_peer.has_value()),
        peer_(expected_peer.value_or(0)),
        last_received_(Clock::now()) {
    asio::error_code ignored;
    remote_ = stream_.lowest_layer().remote_endpoint(ignored).address();
  }

  void start() {
    // Rounds wait on small frames (headers, resync requests, heartbeats): without this, Nagle
    // holds a small write behind the peer's delayed ACK, 40 ms on Linux.
    asio::error_code ignored;
    stream_.lowest_layer().set_option(tcp::no_delay(true), ignored);
    timer_.expires_after(owner_.config_.handshake_timeout);
    timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
      if (ec || !self->usable() || self->open_) return;
      self->failHandshake(Refusal::kHandshakeTimeout);
      self->close("no Hello before the handshake timeout");
    });
    if (!tls_) return begin();
    stream_.async_handshake(
        initiated_ ? asio::ssl::stream_base::client : asio::ssl::stream_base::server,
        [self = shared_from_this()](const asio::error_code& ec) {
          if (!self->usable()) return;
          if (ec || !(self->certificate_id_ = self->peerCertificateId())) {
            self->failHandshake(Refusal::kTlsHandshake);
            return self->close(ec ? "TLS handshake: " + ec.message()
                                  : std::string("certificate names no node (CN=node-<id>)"));
          }
          self->begin();
        });
  }

 private:
  // Runs f on the byte stream: the TLS stream, or the bare socket under it.
  template <typename F>
  void onStream(F&& f) {
    if (tls_) {
      f(stream_);
    } else {
      f(stream_.next_layer());
    }
  }

  // The node id in the verified peer certificate's CN ("node-<id>").
  std::optional<std::uint32_t> peerCertificateId() {
    X509* cert = SSL_get1_peer_certificate(stream_.native_handle());
    if (!cert) return std::nullopt;
    char cn[256] = {};
    const int n =
        X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn);
    X509_free(cert);
    const std::string_view name(cn, n > 0 ? std::size_t(n) : 0);
    if (!name.starts_with("node-") || name.size() <= 5 || name.size() > 15) return std::nullopt;
    std::uint64_t id = 0;
    for (const char c : name.substr(5)) {
      if (c < '0' || c > '9') return std::nullopt;
      id = id * 10 + std::uint64_t(c - '0');
    }
    if (id > 0xffffffffull) return std::nullopt;
    return std::uint32_t(id);
  }

  void begin() {
    enqueue(helloFor(owner_.config_), /*force=*/true);
    readHeader();
  }

 public:
  bool enqueue(const v1::Envelope& envelope, bool force = false) {
    Outgoing out{.head = spareHead()};
    appendFrame(envelope, out.head);
    return push(std::move(out), force);
  }

  bool enqueueRound(const v1::RoundMessage& header, TcpTransport::Payload payload) {
    Outgoing out{.head = spareHead(), .payload = std::move(payload)};
    appendRoundFrameHead(header, out.payload ? out.payload->size() : 0, out.head);
    return push(std::move(out), false);
  }

  // Sends Goodbye and closes once the queue is written. A duplicate connection is closed
  // gracefully in both directions instead: after the Goodbye only our sending half shuts, and
  // we keep reading (and delivering) until the peer, having flushed what it had queued on this
  // connection, closes its half — so a dial race loses no frame.
  void goodbyeAndClose(v1::Goodbye::Reason reason, std::string detail) {
    v1::Envelope bye;
    bye.mutable_goodbye()->set_reason(reason);
    bye.mutable_goodbye()->set_detail(std::move(detail));
    enqueue(bye, /*force=*/true);
    closing_ = true;
    draining_ = reason == v1::Goodbye::DUPLICATE_CONNECTION && open_;
    if (draining_) {  // a bound on how long the peer may take
      timer_.expires_after(owner_.config_.liveness_timeout);
      timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
        if (!ec && self->usable()) self->close("duplicate connection drained too slowly");
      });
    }
    if (!writing_) flushed();
  }

  // The peer said it keeps another connection: stop taking frames here, write what is queued
  // (the peer reads until we close), then close.
  void retire() {
    closing_ = true;
    owner_.handOver(shared_from_this());
    if (!writing_ && queue_.empty()) close("Goodbye: duplicate_connection");
  }

  void close(std::string_view why) {
    if (closed_) return;
    closed_ = true;
    timer_.cancel();
    asio::error_code ignored;
    stream_.lowest_layer().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.lowest_layer().close(ignored);
    if (!alive_.expired()) owner_.closed(shared_from_this(), why);
  }

  // Closes the socket without telling the owner (the owner is tearing down).
  void drop() {
    closed_ = true;
    timer_.cancel();
    asio::error_code ignored;
    stream_.lowest_layer().close(ignored);
  }

  std::uint32_t peer() const { return peer_; }
  const asio::ip::address& remote() const { return remote_; }
  bool isOpen() const { return open_ && !closed_ && !closing_; }
  bool initiated() const { return initiated_; }
  Clock::time_point lastReceived() const { return last_received_; }
  // Bytes the kernel holds for us that no read has taken yet: a loop busy elsewhere (a big mix,
  // a starved thread) has not got to them, which is no sign the peer went quiet.
  bool bytesWaiting() const {
    asio::error_code ec;
    return stream_.lowest_layer().available(ec) > 0 && !ec;
  }

 private:
  bool usable() const { return !alive_.expired() && !closed_; }

  PeerStats* stats() { return open_ || initiated_ ? &owner_.stats_.peers[peer_] : nullptr; }

  void readHeader() {
    onStream([&](auto& s) {
      asio::async_read(s, asio::buffer(header_),
                       [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
                         if (!self->usable()) return;
                         if (ec) return self->readFailed(ec, "closed by peer");
                         const auto length =
                             readLength(self->header_,
                                        self->open_ ? maxFrameBytes(self->owner_.config_.model_dim)
                                                    : kMaxHandshakeFrameBytes);
                         if (!length) return self->refuse(length.error());
                         if (self->open_ && *length >= kDirectMin) {
                           self->pending_ = *length;
                           return self->readHead();
                         }
                         self->body_.resize(*length);
                         self->readBody(0);
                       });
    });
  }

  // Large frames: read the first bytes, and when they show the usual round layout, read the
  // payload straight into the reused message's string — no staging buffer, no copy.
  void readHead() {
    onStream([&](auto& s) {
      asio::async_read(
          s, asio::buffer(head_),
          [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
            if (!self->usable()) return;
            if (ec) return self->readFailed(ec, "closed by peer mid-frame");
            const auto layout = roundLayout(self->head_, self->pending_);
            if (!layout) {  // another shape: the general path, with the head already read
              self->body_.resize(self->pending_);
              std::copy(self->head_.begin(), self->head_.end(), self->body_.begin());
              return self->readBody(self->head_.size());
            }
            if (!self->round_in_.ParseFromArray(self->head_.data() + layout->fields_at,
                                                int(layout->fields_size))) {
              return self->refuse(FrameError::kMalformed);
            }
            self->readPayload(layout->payload_at);
          });
    });
  }

  // The rest of a large round frame, straight into round_in_'s payload.
  void readPayload(std::size_t payload_at) {
    const std::size_t size = pending_ - payload_at;
    const std::size_t have = head_.size() - payload_at;
    std::string* payload = round_in_.mutable_payload();
    payload->resize_and_overwrite(size, [](char*, std::size_t n) { return n; });
    std::copy(head_.begin() + std::ptrdiff_t(payload_at), head_.end(), payload->data());
    readChunks(payload->data(), have, size, &Session::payloadRead);
  }

  void payloadRead() {
    if (!validRound(round_in_)) return refuse(FrameError::kInvalid);
    roundReceived(pending_);
  }

  // Reads the rest of the body (from `from` on) into body_, then parses and dispatches it.
  void readBody(std::size_t from) {
    readChunks(reinterpret_cast<char*>(body_.data()), from, body_.size(), &Session::bodyRead);
  }

  void bodyRead() {
    if (open_) {
      const auto round = parseRoundInto(body_, round_in_);
      if (!round) return refuse(round.error());
      if (*round) return roundReceived(body_.size());
    }
    if (const auto parsed = parseBodyInto(body_, incoming_); !parsed) return refuse(parsed.error());
    last_received_ = Clock::now();
    dispatch(incoming_, kLengthBytes + body_.size());
    readNext();
  }

  // Bytes [from, size) of a frame into `data` (a member's buffer, stable until `done`), in
  // chunks that each count as a sign of life: a 100 MB model frame takes longer than the
  // liveness timeout on a busy link, and the heartbeats queue behind it.
  void readChunks(char* data, std::size_t from, std::size_t size, void (Session::*done)()) {
    const std::size_t chunk = std::min(size - from, kReadChunk);
    onStream([&](auto& s) {
      asio::async_read(s, asio::buffer(data + from, chunk),
                       [self = shared_from_this(), data, next = from + chunk, size, done](
                           const asio::error_code& ec, std::size_t) {
                         if (!self->usable()) return;
                         if (ec) return self->readFailed(ec, "closed by peer mid-frame");
                         if (next < size) {
                           self->last_received_ = Clock::now();
                           return self->readChunks(data, next, size, done);
                         }
                         ((*self).*done)();
                       });
    });
  }

  void readNext() {
    if (usable() && (!closing_ || draining_)) readHeader();
  }

  // A whole round frame is in round_in_.
  void roundReceived(std::size_t body_bytes) {
    last_received_ = Clock::now();
    account(kLengthBytes + body_bytes);
    deliver(round_in_);
    readNext();
  }

  void readFailed(const asio::error_code& ec, const char* at_eof) {
    close(ec == asio::error::eof ? std::string(at_eof) : ec.message());
  }

  // A frame that breaks the format: counted, and the connection closed (framing is lost).
  void refuse(FrameError e) {
    owner_.reject(refusalOf(e));
    close(fmt::format("bad frame: {}", refusalName(e)));
  }

  void failHandshake(Refusal reason) {
    owner_.reject(reason);
    ++owner_.stats_.handshake_failures;
  }

  void dispatch(v1::Envelope& e, std::size_t bytes) {
    if (!open_) {
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
      open_ = true;
      timer_.cancel();
      account(bytes);
      owner_.adopt(shared_from_this());
      return;
    }
    account(bytes);
    switch (e.body_case()) {
      case v1::Envelope::kRound:
        return deliver(*e.mutable_round());
      case v1::Envelope::kResync:
        if (speaksForPeer() && owner_.handlers_.on_resync)
          owner_.handlers_.on_resync(peer_, e.resync());
        return;
      case v1::Envelope::kHeartbeat:
        if (speaksForPeer() && owner_.handlers_.on_heartbeat) {
          owner_.handlers_.on_heartbeat(peer_, e.heartbeat().round());
        }
        return;
      case v1::Envelope::kDigest:
        if (speaksForPeer() && owner_.handlers_.on_digest)
          owner_.handlers_.on_digest(peer_, e.digest());
        return;
      case v1::Envelope::kCoalition:
        if (speaksForPeer() && owner_.handlers_.on_coalition)
          owner_.handlers_.on_coalition(peer_, e.coalition());
        return;
      case v1::Envelope::kGoodbye:
        if (e.goodbye().reason() == v1::Goodbye::DUPLICATE_CONNECTION) return retire();
        return close(fmt::format("Goodbye: {}", refusalName(e.goodbye().reason())));
      default:
        owner_.reject(Refusal::kUnexpectedHello);
        return close("a second Hello");
    }
  }

  // Whether frames read here speak for peer_. With TLS, any connection whose certificate names
  // it (frames still arriving on a duplicate being closed are as genuine as the others). Without
  // TLS a Hello proves nothing, so only the pair's connection speaks: a connection refused as a
  // duplicate, or replaced, delivers nothing (an honest dial race then costs a resync at most).
  bool speaksForPeer() const {
    if (!owner_.open_.contains(peer_)) return false;
    return certificate_id_.has_value() || owner_.open_.at(peer_).get() == this;
  }

  void deliver(v1::RoundMessage& m) {
    if (m.sender() != peer_) {  // a peer speaking for someone else
      owner_.reject(Refusal::kSenderMismatch);
      return;
    }
    if (!speaksForPeer()) {
      owner_.reject(Refusal::kNotPairConnection);
      return;
    }
    if (owner_.handlers_.on_round) owner_.handlers_.on_round(peer_, m);
  }

  void account(std::size_t bytes) {
    PeerStats& s = owner_.stats_.peers[peer_];
    s.bytes_received += bytes;
    ++s.frames_received;
  }

  // One frame to write: `head`, then the shared payload's bytes (if any).
  struct Outgoing {
    std::vector<std::uint8_t> head;
    TcpTransport::Payload payload;
    std::size_t size() const { return head.size() + (payload ? payload->size() : 0); }
  };

  // Head buffers are recycled: fresh large buffers cost page faults on every message.
  std::vector<std::uint8_t> spareHead() {
    if (spare_.empty()) return {};
    std::vector<std::uint8_t> v = std::move(spare_.back());
    spare_.pop_back();
    v.clear();
    return v;
  }

  bool push(Outgoing out, bool force) {
    if (closed_ || closing_) return false;
    if (!force && queued_bytes_ + out.size() > owner_.config_.max_queued_bytes) return false;
    queued_bytes_ += out.size();
    queue_.push_back(std::move(out));
    writeNext();
    return true;
  }

  // Everything queued is written and the session is closing.
  void flushed() {
    if (!draining_) return close("closed after Goodbye");
    asio::error_code ignored;
    stream_.lowest_layer().shutdown(tcp::socket::shutdown_send, ignored);
  }

  void writeNext() {
    if (writing_ || queue_.empty() || closed_) return;
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
                          if (self->queue_.empty() && self->closing_) return self->flushed();
                          self->writeNext();
                        });
    });
  }

  TcpTransport& owner_;
  std::weak_ptr<bool> alive_;
  asio::ssl::stream<tcp::socket> stream_;
  bool tls_;
  std::optional<std::uint32_t> certificate_id_;  // from the peer's certificate (TLS)
  asio::steady_timer timer_;
  bool initiated_;
  std::uint32_t peer_;
  asio::ip::address remote_;
  bool open_ = false, closing_ = false, closed_ = false, writing_ = false;
  bool draining_ = false;  // closing a duplicate: still reading until the peer closes
  std::array<std::uint8_t, kLengthBytes> header_{};
  std::vector<std::uint8_t> body_;
  static constexpr std::size_t kDirectMin = 64u << 10;  // frames this large take readHead()
  static constexpr std::size_t kReadChunk = 1u << 20;   // a large body's reads, each a sign of life
  std::array<std::uint8_t, 64> head_{};
  std::size_t pending_ = 0;  // the large frame's body size
  std::deque<Outgoing> queue_;
  std::vector<std::vector<std::uint8_t>> spare_;
  v1::Envelope incoming_;      // parsed into again and again: its buffers are reused
  v1::RoundMessage round_in_;  // the same for the round fast path (a oneof would free it)
  std::size_t queued_bytes_ = 0;
  Clock::time_point last_received_;
};

TcpTransport::TcpTransport(asio::io_context& io, TransportConfig config, TransportHandlers handlers)
    : io_(io),
      config_(std::move(config)),
      handlers_(std::move(handlers)),
      ssl_(asio::ssl::context::tls),
      acceptor_(io),
      heartbeat_timer_(io),
      jitter_(config_.seed ^ (std::uint64_t(config_.self) << 32)) {}

TcpTransport::~TcpTransport() { abort(); }

std::uint16_t TcpTransport::listen() {
  if (config_.tls.enabled) {
    // Both sides present a certificate from the cluster CA and verify the other's.
    ssl_.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                     asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                     asio::ssl::context::no_tlsv1_1);
    ssl_.load_verify_file(config_.tls.ca);
    ssl_.use_certificate_chain_file(config_.tls.cert);
    ssl_.use_private_key_file(config_.tls.key, asio::ssl::context::pem);
    ssl_.set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
  } else {
    spdlog::info(
        "node {}: security: none — peers are neither authenticated nor encrypted (local "
        "experiments only; use security: tls across machines)",
        config_.self);
  }
  const tcp::endpoint at(asio::ip::make_address(config_.listen_host), config_.listen_port);
  acceptor_.open(at.protocol());
  acceptor_.set_option(tcp::acceptor::reuse_address(true));
  acceptor_.bind(at);
  acceptor_.listen();
  port_ = acceptor_.local_endpoint().port();
  accept();
  heartbeat();
  return port_;
}

void TcpTransport::accept() {
  acceptor_.async_accept(
      [this, alive = std::weak_ptr<bool>(alive_)](const asio::error_code& ec, tcp::socket socket) {
        if (alive.expired() || stopped_) return;
        if (!ec) admit(std::move(socket));
        accept();
      });
}

bool TcpTransport::neighbourAddress(const asio::ip::address& a) const {
  for (const auto& [_, d] : dialers_) {
    asio::error_code ec;
    const auto host = asio::ip::make_address(d->address.host, ec);
    if (!ec && host == a) return true;
  }
  return false;
}

void TcpTransport::admit(asio::ip::tcp::socket socket) {
  asio::error_code ec;
  const asio::ip::address from = socket.remote_endpoint(ec).address();
  if (ec) return;  // already gone
  std::size_t pending = 0, from_same = 0;
  std::shared_ptr<Session> oldest;
  for (const auto& s : sessions_) {
    if (s->isOpen() || s->initiated()) continue;
    ++pending;
    if (s->remote() == from) ++from_same;
    if (!oldest) oldest = s;  // sessions_ is in creation order
  }
  if (from_same >= kMaxPendingPerAddress && !neighbourAddress(from)) {
    reject(Refusal::kTooManyPending);
    socket.close(ec);
    return;
  }
  if (pending >= kMaxPendingHandshakes && oldest) {
    reject(Refusal::kPendingEvicted);
    ++stats_.handshake_failures;
    oldest->close("evicted: too many pending handshakes");
  }
  auto session = std::make_shared<Session>(*this, std::move(socket), std::nullopt);
  sessions_.push_back(session);
  session->start();
}

void TcpTransport::connect(std::vector<PeerAddress> addresses) {
  for (auto& a : addresses) {
    if (std::find(config_.neighbours.begin(), config_.neighbours.end(), a.id) ==
        config_.neighbours.end())
      continue;
    const std::uint32_t peer = a.id;
    dialers_[peer] = std::make_unique<Dialer>(
        Dialer{std::move(a), asio::steady_timer(io_), config_.backoff_initial});
    // Both sides dial, but the higher id waits a little first, so the connection the pair
    // keeps (dialled by the lower id) usually comes up alone and no duplicate is torn down.
    if (config_.self < peer) {
      dial(peer);
    } else {
      scheduleDial(peer, false, config_.backoff_initial * 5);
    }
  }
}

void TcpTransport::dial(std::uint32_t peer) {
  Dialer& d = *dialers_.at(peer);
  if (stopped_ || open_.contains(peer) || d.dialling) return;
  d.dialling = true;
  auto resolver = std::make_shared<tcp::resolver>(io_);
  resolver->async_resolve(
      d.address.host, std::to_string(d.address.port),
      [this, peer, resolver, alive = std::weak_ptr<bool>(alive_)](
          const asio::error_code& ec, tcp::resolver::results_type results) {
        if (alive.expired() || stopped_) return;
        if (ec) {
          dialers_.at(peer)->dialling = false;
          return scheduleDial(peer, true);
        }
        auto socket = std::make_shared<tcp::socket>(io_);
        asio::async_connect(
            *socket, results,
            [this, peer, socket, alive](const asio::error_code& ec2, const tcp::endpoint&) {
              if (alive.expired() || stopped_) return;
              dialers_.at(peer)->dialling = false;
              if (ec2) return scheduleDial(peer, true);
              if (open_.contains(peer)) return;  // the peer's own dial won the race: nothing to do
              auto session = std::make_shared<Session>(*this, std::move(*socket), peer);
              sessions_.push_back(session);
              session->start();
            });
      });
}

void TcpTransport::scheduleDial(std::uint32_t peer, bool after_failure,
                                std::chrono::milliseconds extra) {
  const auto it = dialers_.find(peer);
  if (stopped_ || it == dialers_.end()) return;
  Dialer& d = *it->second;
  d.backoff =
      after_failure ? std::min(d.backoff * 2, config_.backoff_max) : config_.backoff_initial;
  const auto jitter = std::chrono::milliseconds(
      std::uniform_int_distribution<long>(0, std::max<long>(d.backoff.count() / 2, 1))(jitter_));
  d.timer.expires_after(d.backoff + jitter + extra);
  d.timer.async_wait([this, peer, alive = std::weak_ptr<bool>(alive_)](const asio::error_code& ec) {
    if (ec || alive.expired() || stopped_) return;
    dial(peer);
  });
}

bool TcpTransport::adopt(const std::shared_ptr<Session>& s) {
  const std::uint32_t peer = s->peer();
  // When both sides dial, both keep the connection dialled by the lower id.
  const auto preferred = [&](const Session& x) {
    return (x.initiated() ? config_.self : peer) == std::min(config_.self, peer);
  };
  if (stopped_) {
    s->goodbyeAndClose(v1::Goodbye::LEAVING, "shutting down");
    return false;
  }
  const auto it = open_.find(peer);
  if (it != open_.end()) {
    if (preferred(*it->second) && !preferred(*s)) {
      s->goodbyeAndClose(v1::Goodbye::DUPLICATE_CONNECTION,
                         "keeping the connection dialled by the lower id");
      return false;
    }
    // s is preferred, or both are equal (a peer that restarted): the newer one stays. What was
    // in flight on the old one is lost to the node, so it hears of a new connection.
    auto old = it->second;
    it->second = s;
    old->goodbyeAndClose(v1::Goodbye::DUPLICATE_CONNECTION, "replaced by a newer connection");
    if (handlers_.on_up) handlers_.on_up(peer);
    return true;
  }
  open_[peer] = s;
  if (++stats_.peers[peer].connects > 1) ++stats_.reconnects;
  if (handlers_.on_up) handlers_.on_up(peer);
  return true;
}

bool TcpTransport::handOver(const std::shared_ptr<Session>& s) {
  const auto it = open_.find(s->peer());
  if (it == open_.end() || it->second != s) return true;  // not the pair's connection
  // Another authenticated connection to the same peer (the other half of a dial race) takes
  // over silently: the peer never went away.
  for (const auto& other : sessions_) {
    if (other != s && other->isOpen() && other->peer() == s->peer()) {
      it->second = other;
      return true;
    }
  }
  return false;
}

void TcpTransport::closed(const std::shared_ptr<Session>& s, std::string_view why) {
  std::erase(sessions_, s);
  if (handOver(s)) return;  // no event: the peer is still (or was never) connected here
  open_.erase(s->peer());
  if (handlers_.on_down) handlers_.on_down(s->peer(), why);
  if (!stopped_) scheduleDial(s->peer(), false);
}

bool TcpTransport::sendRound(std::uint32_t peer, const v1::RoundMessage& header, Payload payload) {
  const auto it = open_.find(peer);
  if (it == open_.end() || !it->second->enqueueRound(header, std::move(payload))) {
    ++stats_.peers[peer].dropped_sends;
    return false;
  }
  return true;
}

bool TcpTransport::send(std::uint32_t peer, const v1::Envelope& envelope) {
  const auto it = open_.find(peer);
  if (it == open_.end() || !it->second->enqueue(envelope)) {
    ++stats_.peers[peer].dropped_sends;
    return false;
  }
  return true;
}

std::vector<std::uint32_t> TcpTransport::livePeers() const {
  std::vector<std::uint32_t> out;
  for (const auto& [peer, s] : open_) {
    if (s->isOpen()) out.push_back(peer);
  }
  return out;
}

void TcpTransport::heartbeat() {
  heartbeat_timer_.expires_after(config_.heartbeat_every);
  heartbeat_timer_.async_wait(
      [this, alive = std::weak_ptr<bool>(alive_)](const asio::error_code& ec) {
        if (ec || alive.expired() || stopped_) return;
        const auto now = Clock::now();
        v1::Envelope beat;
        beat.mutable_heartbeat()->set_round(round_);
        for (auto& [peer, s] : std::map(open_)) {
          if (now - s->lastReceived() <= config_.liveness_timeout) {
            s->enqueue(beat);
            continue;
          }
          // Decided after what is already queued: a loop that was busy past the timeout may hold
          // a completed read of this peer's, not yet handled, right behind this timer.
          asio::post(io_, [this, s, alive] {
            if (alive.expired() || stopped_ || !s->isOpen()) return;
            if (Clock::now() - s->lastReceived() > config_.liveness_timeout && !s->bytesWaiting())
              s->close("liveness timeout");
          });
        }
        heartbeat();
      });
}

void TcpTransport::stop() {
  if (stopped_) return;
  stopped_ = true;
  asio::error_code ignored;
  acceptor_.close(ignored);
  heartbeat_timer_.cancel();
  for (auto& [_, d] : dialers_) d->timer.cancel();
  for (auto& s : std::vector(sessions_)) {
    if (s->isOpen()) {
      s->goodbyeAndClose(v1::Goodbye::LEAVING, "shutting down");
    } else {
      s->close("shutting down");
    }
  }
}

void TcpTransport::abort() {
  stopped_ = true;
  asio::error_code ignored;
  acceptor_.close(ignored);
  heartbeat_timer_.cancel();
  for (auto& [_, d] : dialers_) d->timer.cancel();
  for (auto& s : sessions_) s->drop();
  sessions_.clear();
  open_.clear();
}

}  // namespace phalanx::net
