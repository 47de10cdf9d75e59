#include "net/memory_transport.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "net/frame.h"

namespace phalanx::net {

const LinkModel& LinkTable::of(std::uint32_t a, std::uint32_t b) const {
  if (const auto it = edges.find({std::min(a, b), std::max(a, b)}); it != edges.end()) {
    return it->second;
  }
  const auto ra = region_of.find(a), rb = region_of.find(b);
  if (ra != region_of.end() && rb != region_of.end()) {
    const std::optional<LinkModel>& cls = ra->second == rb->second ? within : across;
    if (cls) return *cls;
  }
  return fallback;
}

std::chrono::nanoseconds LinkTable::minLatency() const {
  const auto fastest = [](const LinkModel& l) { return l.latency - l.jitter; };
  auto m = fastest(fallback);
  for (const auto& [_, link] : edges) m = std::min(m, fastest(link));
  for (const auto* cls : {&within, &across}) {
    if (*cls) m = std::min(m, fastest(**cls));
  }
  return m;
}

namespace {

constexpr std::size_t kSegmentBytes = 1448;  // TCP payload per segment over Ethernet
constexpr auto kMinRetransmitTimeout = std::chrono::milliseconds(200);

// What jitter and loss add to a frame of `bytes` on `link` (see LinkModel).
std::chrono::nanoseconds extraDelay(const LinkModel& link, std::size_t bytes,
                                    std::mt19937_64& rng) {
  std::chrono::nanoseconds extra{0};
  if (link.jitter.count() > 0) {
    std::uniform_int_distribution<std::int64_t> j(-link.jitter.count(), link.jitter.count());
    extra += std::chrono::nanoseconds(j(rng));
  }
  if (link.loss > 0) {
    const std::size_t segments =
        std::max<std::size_t>(1, (bytes + kSegmentBytes - 1) / kSegmentBytes);
    // Only whether any segment was lost matters: one draw, not one per segment.
    std::bernoulli_distribution lost(1.0 - std::pow(1.0 - link.loss, double(segments)));
    if (lost(rng)) {
      const std::chrono::nanoseconds round_trip = 2 * link.latency;
      extra += segments < 4 ? std::max<std::chrono::nanoseconds>(kMinRetransmitTimeout, round_trip)
                            : round_trip;
    }
  }
  return extra;
}

}  // namespace

class MemoryTransport final : public Transport {
 public:
  MemoryTransport(MemoryNetwork& network, TransportConfig config, TransportHandlers handlers)
      : network_(network),
        config_(std::move(config)),
        handlers_(std::move(handlers)),
        actor_(network.actorOf(config_.self)),
        clock_(network.scheduler().clock(actor_)),
        heartbeat_timer_(clock_.timer()) {
    network_.endpoints_.at(actor_) = this;
  }
  ~MemoryTransport() override {
    if (network_.endpoints_.at(actor_) == this) network_.endpoints_.at(actor_) = nullptr;
  }

  std::uint16_t listen() override { return 0; }
  // Every peer of the network is made in-process by its owner: nobody else can name one.
  bool authenticated() const override { return true; }

  void connect(std::vector<PeerAddress>) override {
    if (closed_) return;
    for (const std::uint32_t j : config_.neighbours) {
      v1::Envelope hello = helloFor(config_);
      transmit(j, std::move(hello));
    }
    heartbeat();
  }

  bool send(std::uint32_t peer, const v1::Envelope& envelope) override {
    return sendShared(peer, std::make_shared<const v1::Envelope>(envelope));
  }

  // Every receiver reads the one message: it is immutable once sent.
  bool sendShared(std::uint32_t peer,
                  const std::shared_ptr<const v1::Envelope>& envelope) override {
    if (closed_ || !up_.contains(peer)) {
      ++stats_.peers[peer].dropped_sends;
      return false;
    }
    transmit(peer, envelope);
    return true;
  }

  bool sendRound(std::uint32_t peer, const v1::RoundMessage& header, Payload payload) override {
    if (closed_ || !up_.contains(peer)) {
      ++stats_.peers[peer].dropped_sends;
      return false;
    }
    const std::size_t payload_bytes = payload ? payload->size() : 0;
    head_.clear();  // what TCP writes before the payload, for its length only
    appendRoundFrameHead(header, payload_bytes, head_);
    const std::size_t bytes = head_.size() + payload_bytes;
    // Every receiver reads the sender's own buffer: it is immutable once sent. Its receivers
    // share one PayloadChecks; held with the buffer here, the buffer's owner cannot write it in
    // place (it writes only buffers nobody else holds), so a verdict never outlives the bytes.
    if (payload != checked_payload_) {
      checked_payload_ = payload;
      checks_ = payload ? std::make_shared<PayloadChecks>() : nullptr;
    }
    // Delivered once: the header moves into the message (a copy would allocate its digest
    // and signature again, per receiver).
    deliverLater(
        peer, bytes,
        [header, payload, checks = checks_](MemoryTransport& to, std::uint32_t from) mutable {
          Received m(std::move(header), std::move(payload), std::move(checks));
          to.receiveRound(from, m);
        });
    return true;
  }

  void setRound(std::uint64_t round) override { round_ = round; }

  std::vector<std::uint32_t> livePeers() const override { return {up_.begin(), up_.end()}; }
  const TransportStats& stats() const override { return stats_; }

  void stop() override {
    if (closed_) return;
    v1::Envelope bye;
    bye.mutable_goodbye()->set_reason(v1::Goodbye::LEAVING);
    const auto shared = std::make_shared<const v1::Envelope>(std::move(bye));
    for (const std::uint32_t j : std::vector(up_.begin(), up_.end())) transmit(j, shared);
    close();
  }

  void abort() override {
    if (closed_) return;
    // A reset: no bytes, but the neighbours learn of it one latency later.
    for (const std::uint32_t j : std::vector(up_.begin(), up_.end())) {
      deliverLater(j, 0, [](MemoryTransport& to, std::uint32_t from) {
        to.lose(from, "connection reset by peer");
      });
    }
    close();
  }

 private:
  using Delivery = std::function<void(MemoryTransport& to, std::uint32_t from)>;

  void close() {
    closed_ = true;
    heartbeat_timer_->cancel();
    up_.clear();
  }

  void transmit(std::uint32_t peer, std::shared_ptr<const v1::Envelope> envelope) {
    const std::size_t bytes = kLengthBytes + envelope->ByteSizeLong();
    deliverLater(peer, bytes,
                 [envelope = std::move(envelope)](MemoryTransport& to, std::uint32_t from) {
                   to.receive(from, *envelope);
                 });
  }
  void transmit(std::uint32_t peer, v1::Envelope envelope) {
    transmit(peer, std::make_shared<const v1::Envelope>(std::move(envelope)));
  }

  // Counts the frame and schedules its arrival on the receiver's actor, whichever endpoint holds
  // that id then (none: lost, as a frame to a dead host).
  void deliverLater(std::uint32_t peer, std::size_t bytes, Delivery deliver) {
    PeerStats& s = stats_.peers[peer];
    if (bytes > 0) {
      s.bytes_sent += bytes;
      ++s.frames_sent;
    }
    const LinkModel& link = network_.links_.of(config_.self, peer);
    const auto now = clock_.now();
    auto& free_at = link_free_[peer];
    const auto start = std::max(now, free_at);
    const auto serialise = link.megabits_per_second > 0
                               ? std::chrono::nanoseconds(std::int64_t(double(bytes) * 8.0 * 1e3 /
                                                                       link.megabits_per_second))
                               : std::chrono::nanoseconds(0);
    free_at = start + serialise;
    // Jitter and loss only where the link has them: the draws would shift every later one.
    auto arrival = free_at + link.latency;
    if (link.jitter.count() > 0 || link.loss > 0) {
      auto [it, fresh] = link_rng_.try_emplace(peer);
      if (fresh) it->second.seed(network_.links_.seed ^ (std::uint64_t(config_.self) << 32) ^ peer);
      arrival += extraDelay(link, bytes, it->second);
    }
    // In order on the link, as TCP delivers.
    auto& last = link_arrival_[peer];
    arrival = std::max(arrival, last);
    last = arrival;
    const std::uint32_t to_actor = network_.actorOf(peer);
    MemoryNetwork* network = &network_;
    network_.scheduler_.schedule(
        actor_, to_actor, arrival,
        [network, to_actor, from = config_.self, bytes, deliver = std::move(deliver)] {
          MemoryTransport* to = network->endpoints_.at(to_actor);
          if (to && !to->closed_) to->arrive(from, bytes, deliver);
        });
  }

  void arrive(std::uint32_t from, std::size_t bytes, const Delivery& deliver) {
    if (bytes > 0) {
      PeerStats& s = stats_.peers[from];
      s.bytes_received += bytes;
      ++s.frames_received;
    }
    deliver(*this, from);
  }

  void receive(std::uint32_t from, const v1::Envelope& e) {
    switch (e.body_case()) {
      case v1::Envelope::kHello:
        return handshake(from, e.hello());
      case v1::Envelope::kGoodbye:
        return lose(from, "Goodbye: " + std::string(refusalName(e.goodbye().reason())));
      default:
        break;
    }
    if (!up_.contains(from)) return;  // a frame of a connection this incarnation never had
    if (!dispatchEnvelope(handlers_, from, e)) ++stats_.rejected[Refusal::kUnexpectedEnvelope];
  }

  void handshake(std::uint32_t from, const v1::Hello& hello) {
    std::string detail;
    auto refusal = checkHello(config_, hello, detail);
    if (!refusal && hello.node_id() != from) refusal = v1::Goodbye::UNKNOWN_NODE;
    if (refusal) {
      ++stats_.handshake_failures;
      ++stats_.rejected[refusalOf(*refusal)];
      return;
    }
    // The answer to a Hello is a Hello marked as one (so answers are not answered).
    const bool answer = hello.features_size() > 0 && hello.features(0) == "answer";
    if (!answer) {
      v1::Envelope back = helloFor(config_);
      back.mutable_hello()->add_features("answer");
      transmit(from, std::move(back));
    }
    if (up_.contains(from)) {
      if (answer) return;  // both sides dialled: the other Hello made the connection already
      up_.erase(from);     // a new incarnation of the peer: the old connection is gone
      if (handlers_.on_down) handlers_.on_down(from, "reconnected");
    }
    up_.insert(from);
    PeerStats& s = stats_.peers[from];
    if (s.connects++ > 0) ++stats_.reconnects;
    if (handlers_.on_up) handlers_.on_up(from);
    // The round at once (TCP waits for the next beat): a joining node learns its neighbours'
    // rounds one latency after connecting, not a heartbeat period later.
    v1::Envelope beat;
    beat.mutable_heartbeat()->set_round(round_);
    transmit(from, std::move(beat));
  }

  void receiveRound(std::uint32_t from, Received& m) {
    if (!up_.contains(from)) return;
    if (!validRound(m.header())) {
      ++stats_.rejected[Refusal::kInvalid];
      return;
    }
    if (m.sender() != from) {
      ++stats_.rejected[Refusal::kSenderMismatch];
      return;
    }
    if (handlers_.on_round) handlers_.on_round(from, m);
  }

  void lose(std::uint32_t from, const std::string& why) {
    if (!up_.erase(from)) return;
    if (handlers_.on_down) handlers_.on_down(from, why);
  }

  void heartbeat() {
    heartbeat_timer_->start(config_.heartbeat_every, [this] {
      if (closed_) return;
      v1::Envelope beat;
      beat.mutable_heartbeat()->set_round(round_);
      const auto shared = std::make_shared<const v1::Envelope>(std::move(beat));
      for (const std::uint32_t j : std::vector(up_.begin(), up_.end())) transmit(j, shared);
      heartbeat();
    });
  }

  MemoryNetwork& network_;
  TransportConfig config_;
  TransportHandlers handlers_;
  std::uint32_t actor_;
  Clock& clock_;
  std::unique_ptr<Timer> heartbeat_timer_;
  std::set<std::uint32_t> up_;
  std::map<std::uint32_t, Clock::TimePoint> link_free_;     // when each outgoing link is idle
  std::map<std::uint32_t, Clock::TimePoint> link_arrival_;  // the last frame's arrival per link
  std::map<std::uint32_t, std::mt19937_64> link_rng_;       // jitter and loss draws per link
  std::uint64_t round_ = 0;
  bool closed_ = false;
  std::vector<std::uint8_t> head_;         // reused: a round frame's head, measured
  Payload checked_payload_;                // the last payload sent, held while its receivers share
  std::shared_ptr<PayloadChecks> checks_;  // what they checked of it
  TransportStats stats_;
};

MemoryNetwork::MemoryNetwork(VirtualScheduler& scheduler,
                             std::map<std::uint32_t, std::uint32_t> actor_of, LinkTable links)
    : scheduler_(scheduler), actor_of_(std::move(actor_of)), links_(std::move(links)) {
  if (links_.minLatency() <= std::chrono::nanoseconds(0))
    throw std::invalid_argument("simulated links need a latency above their jitter (and 0)");
  endpoints_.assign(scheduler_.actors(), nullptr);
}

std::unique_ptr<Transport> MemoryNetwork::transport(TransportConfig config,
                                                    TransportHandlers handlers) {
  return std::make_unique<MemoryTransport>(*this, std::move(config), std::move(handlers));
}

}  // namespace phalanx::net
