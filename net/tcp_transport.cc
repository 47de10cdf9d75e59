#include "net/tcp_transport.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "net/tcp_session.h"
#include "net/tls.h"

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

}  // namespace

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
    configureMutualTls(ssl_, config_.tls);
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
