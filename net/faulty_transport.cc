#include "net/faulty_transport.h"

#include <algorithm>

namespace phalanx::net {

FaultyTransport::FaultyTransport(Clock& clock, TransportHandlers handlers, const Inner& make_inner,
                                 std::uint64_t seed)
    : clock_(clock), handlers_(std::move(handlers)), rng_(seed), delay_timer_(clock.timer()) {
  // Everything from a partitioned peer vanishes here, as if it never came.
  TransportHandlers in = filteredHandlers(
      handlers_, [this](std::uint32_t peer) { return !blocked(peer); },
      [this](std::uint32_t peer) { return !cut(peer); });
  inner_ = make_inner(std::move(in));
}

FaultyTransport::~FaultyTransport() = default;

void FaultyTransport::setPartitioned(const std::vector<std::uint32_t>& peers) {
  const std::set<std::uint32_t> next(peers.begin(), peers.end());
  const auto live = inner_->livePeers();
  const auto was = std::exchange(partitioned_, next);
  for (const std::uint32_t p : live) {
    const bool cut_now = next.contains(p), cut_before = was.contains(p);
    if (cut_now && !cut_before && handlers_.on_down) handlers_.on_down(p, "partitioned");
    // Healed: what was in flight across the cut is lost, as on a new connection.
    if (!cut_now && cut_before && handlers_.on_up) handlers_.on_up(p);
  }
}

void FaultyTransport::heal() {
  drop_ = corrupt_ = 0;
  delay_ = std::chrono::milliseconds(0);
  setPartitioned({});
}

bool FaultyTransport::send(std::uint32_t peer, const v1::Envelope& envelope) {
  if (blocked(peer)) return false;
  return inner_->send(peer, envelope);
}

bool FaultyTransport::sendShared(std::uint32_t peer,
                                 const std::shared_ptr<const v1::Envelope>& envelope) {
  if (blocked(peer)) return false;
  return inner_->sendShared(peer, envelope);
}

bool FaultyTransport::sendRound(std::uint32_t peer, const v1::RoundMessage& header,
                                Payload payload) {
  if (blocked(peer)) return false;
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  if (drop_ > 0 && coin(rng_) < drop_) return true;  // lost on the way: the peer sees a gap
  if (corrupt_ > 0 && coin(rng_) < corrupt_ && payload && !payload->empty()) {
    auto damaged = std::make_shared<std::vector<std::uint8_t>>(*payload);
    std::uniform_int_distribution<std::size_t> at(0, damaged->size() - 1);
    for (int k = 0; k < 8; ++k) (*damaged)[at(rng_)] ^= 0xFF;
    payload = std::move(damaged);
  }
  if (delay_.count() > 0) {
    const bool first = delayed_.empty();
    const auto at = clock_.now() + delay_;
    delayed_.emplace(at, Delayed{peer, header, std::move(payload)});
    if (first || delayed_.begin()->first == at) {
      delay_timer_->start(at - clock_.now(), [this] { releaseDelayed(); });
    }
    return true;
  }
  return inner_->sendRound(peer, header, std::move(payload));
}

void FaultyTransport::releaseDelayed() {
  const auto now = clock_.now();
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    auto node = delayed_.extract(delayed_.begin());
    Delayed& d = node.mapped();
    if (!stopped_ && !cut(d.peer)) inner_->sendRound(d.peer, d.header, std::move(d.payload));
  }
  if (!delayed_.empty()) {
    delay_timer_->start(delayed_.begin()->first - now, [this] { releaseDelayed(); });
  }
}

std::vector<std::uint32_t> FaultyTransport::livePeers() const {
  auto live = inner_->livePeers();
  std::erase_if(live, [this](std::uint32_t p) { return cut(p); });
  return live;
}

void FaultyTransport::stop() {
  stopped_ = true;
  delay_timer_->cancel();
  delayed_.clear();
  inner_->stop();
}

void FaultyTransport::abort() {
  stopped_ = true;
  delay_timer_->cancel();
  delayed_.clear();
  inner_->abort();
}

}  // namespace phalanx::net
