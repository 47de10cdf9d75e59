// The transport in one process on 127.0.0.1, port 0: eight endpoints all-to-all, crashes,
// restarts, shutdown, and hostile connections — driven by io.run_for, never sleep.
#include <gtest/gtest.h>
#include <unistd.h>

#include <asio.hpp>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "net/frame.h"
#include "net/tcp_transport.h"
#include "tests/support/run_until.h"

namespace phalanx::net {
namespace {

using namespace std::chrono_literals;
using asio::ip::tcp;

struct Endpoint {
  std::unique_ptr<TcpTransport> transport;
  std::map<std::uint32_t, std::vector<v1::RoundMessage>> received;
  std::function<void(std::uint32_t, Received&)> watch;  // sees each round message as delivered
  std::set<std::uint32_t> up;
  std::vector<std::string> downs;
  std::uint16_t port = 0;
};

class Cluster {
 public:
  // n endpoints, each a neighbour of every other one. `lower_dials_only`: each pair is dialled
  // by its lower id alone, so no dial race can replace a connection that frames were already
  // queued on (the transport drops those by design: docs/PROTOCOL.md; the node resyncs).
  explicit Cluster(std::uint32_t n, std::chrono::milliseconds handshake_timeout = 2000ms,
                   std::uint64_t dim = 1000, bool lower_dials_only = false)
      : n_(n), dim_(dim) {
    for (std::uint32_t id = 0; id < n; ++id) {
      nodes_.push_back(std::make_unique<Endpoint>());
      start(id, 0, handshake_timeout);
    }
    for (std::uint32_t id = 0; id < n; ++id) connect(id, lower_dials_only);
  }

  TransportConfig config(std::uint32_t id, std::uint16_t port,
                         std::chrono::milliseconds handshake_timeout) const {
    TransportConfig c{.self = id,
                      .cluster_id = "test",
                      .model_dim = dim_,
                      .config_digest = "digest",
                      .listen_port = port,
                      .heartbeat_every = 50ms,
                      .liveness_timeout = 2000ms,
                      .handshake_timeout = handshake_timeout,
                      .backoff_initial = 10ms,
                      .backoff_max = 200ms};
    for (std::uint32_t j = 0; j < n_; ++j) {
      if (j != id) c.neighbours.push_back(j);
    }
    return c;
  }

  void start(std::uint32_t id, std::uint16_t port,
             std::chrono::milliseconds handshake_timeout = 2000ms) {
    Endpoint& e = *nodes_[id];
    e = Endpoint{};
    e.transport = std::make_unique<TcpTransport>(
        io, config(id, port, handshake_timeout),
        TransportHandlers{.on_round =
                              [&e](std::uint32_t peer, Received& m) {
                                e.received[peer].push_back(m.whole());
                                if (e.watch) e.watch(peer, m);
                              },
                          .on_up = [&e](std::uint32_t peer) { e.up.insert(peer); },
                          .on_down =
                              [&e](std::uint32_t peer, std::string_view why) {
                                e.up.erase(peer);
                                e.downs.emplace_back(why);
                              }});
    e.port = e.transport->listen();
  }

  // Dials every other endpoint, or with `lower_dials_only` only those with a higher id.
  void connect(std::uint32_t id, bool lower_dials_only = false) {
    std::vector<PeerAddress> all;
    for (std::uint32_t j = 0; j < n_; ++j) {
      if (!lower_dials_only || j > id) all.push_back({j, "127.0.0.1", nodes_[j]->port});
    }
    nodes_[id]->transport->connect(all);
  }

  template <typename Pred>
  bool runUntil(Pred done, std::chrono::milliseconds limit = 10s) {
    return testing::runUntil(io, done, limit);
  }
  void runFor(std::chrono::milliseconds span) {
    testing::runUntil(
        io, [] { return false; }, span);
  }

  bool allConnected() {
    for (std::uint32_t id = 0; id < n_; ++id) {
      if (nodes_[id]->transport && nodes_[id]->up.size() != n_ - 1) return false;
    }
    return true;
  }

  Endpoint& operator[](std::uint32_t id) { return *nodes_[id]; }

  asio::io_context io;

 private:
  std::uint32_t n_;
  std::uint64_t dim_;
  std::vector<std::unique_ptr<Endpoint>> nodes_;
};

v1::Envelope roundMessage(std::uint64_t round, std::uint32_t sender, std::string payload) {
  v1::Envelope e;
  auto* m = e.mutable_round();
  m->set_round(round);
  m->set_sender(sender);
  m->set_kind(v1::RoundMessage::DELTA);
  m->set_payload(std::move(payload));
  return e;
}

TEST(Transport, EightEndpointsAllToAll) {
  // Both sides dialling (the default) can, on a slow machine (TSan), leave a pair's second
  // connection to arrive after allConnected() and replace the first with frames on it.
  Cluster c(8, 2000ms, 1000, true);
  ASSERT_TRUE(c.runUntil([&] { return c.allConnected(); }));
  for (std::uint32_t round = 0; round < 3; ++round) {
    for (std::uint32_t i = 0; i < 8; ++i) {
      for (std::uint32_t j = 0; j < 8; ++j) {
        if (i == j) continue;
        ASSERT_TRUE(
            c[i].transport->send(j, roundMessage(round, i, std::string(1000, char('a' + i)))));
      }
    }
  }
  ASSERT_TRUE(c.runUntil([&] {
    for (std::uint32_t i = 0; i < 8; ++i) {
      for (std::uint32_t j = 0; j < 8; ++j) {
        if (i != j && c[i].received[j].size() != 3) return false;
      }
    }
    return true;
  }));
  for (std::uint32_t i = 0; i < 8; ++i) {
    EXPECT_EQ(c[i].transport->livePeers().size(), 7u);
    EXPECT_TRUE(c[i].downs.empty());
    for (std::uint32_t j = 0; j < 8; ++j) {
      if (i == j) continue;
      EXPECT_EQ(c[i].received[j][2].round(), 2u);
      EXPECT_EQ(c[i].transport->stats().peers.at(j).connects, 1u);  // one connection per pair
      EXPECT_GT(c[i].transport->stats().peers.at(j).bytes_sent, 3000u);
    }
  }
}

TEST(Transport, LargePayloadsArriveIntactOnEveryPath) {
  Cluster c(2, 2000ms, 1'000'000);  // frames up to 8 MB
  ASSERT_TRUE(c.runUntil([&] { return c.allConnected(); }));
  std::vector<std::uint8_t> bytes(3 << 20);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = std::uint8_t(i * 131 + 7);
  auto shared = std::make_shared<const std::vector<std::uint8_t>>(bytes);
  v1::RoundMessage header;
  header.set_round(1);
  header.set_sender(0);
  header.set_kind(v1::RoundMessage::KEYFRAME);
  ASSERT_TRUE(c[0].transport->sendRound(1, header, shared));  // shared payload, read in place
  ASSERT_TRUE(c[0].transport->send(
      1, roundMessage(2, 0, std::string(bytes.begin(), bytes.end()))));  // copied
  ASSERT_TRUE(c.runUntil([&] { return c[1].received[0].size() == 2; }));
  for (const auto& m : c[1].received[0]) {
    ASSERT_EQ(m.payload().size(), bytes.size());
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(),
                           reinterpret_cast<const std::uint8_t*>(m.payload().data())));
  }
  EXPECT_EQ(c[1].received[0][0].kind(), v1::RoundMessage::KEYFRAME);
  EXPECT_EQ(c[1].received[0][1].round(), 2u);
}

TEST(Transport, LargePayloadBuffersAreReusedOnceTheReceiverLetsThemGo) {
  // A replica keeps the last keyframe it was sent until the next one: the receiver below does
  // the same. Round after round the frames land in the same two buffers — no model-sized
  // allocation (nor fresh pages to fault in) per round — and each holds exactly its frame.
  Cluster c(2, 2000ms, 1'000'000);
  ASSERT_TRUE(c.runUntil([&] { return c.allConnected(); }));
  Payload held;
  std::vector<std::weak_ptr<const std::vector<std::uint8_t>>> seen;
  c[1].watch = [&](std::uint32_t, Received& m) {
    seen.push_back(m.sharedPayload());
    held = m.sharedPayload();
  };
  for (std::uint32_t round = 0; round < 10; ++round) {
    const std::size_t size = (2 << 20) - 4096 * (round % 3);  // recycled buffers shrink, regrow
    auto bytes = std::make_shared<std::vector<std::uint8_t>>(size);
    for (std::size_t i = 0; i < size; ++i) (*bytes)[i] = std::uint8_t(i * 31 + round);
    v1::RoundMessage header;
    header.set_round(round);
    header.set_sender(0);
    header.set_kind(v1::RoundMessage::KEYFRAME);
    ASSERT_TRUE(c[0].transport->sendRound(1, header, bytes));
    ASSERT_TRUE(c.runUntil([&] { return c[1].received[0].size() == round + 1; }));
    ASSERT_EQ(held->size(), size) << round;
    EXPECT_TRUE(std::equal(bytes->begin(), bytes->end(), held->begin())) << round;
  }
  // Every round's buffer still lives (the transport keeps it to reuse), and there are two.
  std::set<const std::vector<std::uint8_t>*> buffers;
  for (const auto& w : seen) {
    ASSERT_FALSE(w.expired());
    buffers.insert(w.lock().get());
  }
  EXPECT_EQ(buffers.size(), 2u);
}

TEST(Transport, CrashIsDetectedAndTheRestartedPeerReconnects) {
  Cluster c(3);
  ASSERT_TRUE(c.runUntil([&] { return c.allConnected(); }));
  const std::uint16_t port = c[2].port;
  c[2].transport->abort();  // a crash: no Goodbye
  ASSERT_TRUE(c.runUntil([&] { return !c[0].up.contains(2) && !c[1].up.contains(2); }));
  c.start(2, port);  // restarted on the same port
  c.connect(2);
  ASSERT_TRUE(c.runUntil([&] { return c.allConnected(); }));
  EXPECT_GE(c[0].transport->stats().reconnects, 1u);
  ASSERT_TRUE(c[0].transport->send(2, roundMessage(5, 0, "after restart")));
  ASSERT_TRUE(c.runUntil([&] { return c[2].received[0].size() == 1; }));
}

TEST(Transport, StopSaysGoodbyeSoNeighboursStopWaitingAtOnce) {
  Cluster c(3);
  ASSERT_TRUE(c.runUntil([&] { return c.allConnected(); }));
  c[1].transport->stop();
  ASSERT_TRUE(c.runUntil([&] { return !c[0].up.contains(1) && !c[2].up.contains(1); }, 1s));
  ASSERT_FALSE(c[0].downs.empty());
  EXPECT_EQ(c[0].downs.back(), "Goodbye: leaving");
  EXPECT_FALSE(c[0].transport->send(1, roundMessage(1, 0, "x")));
}

// A raw client for hostile tests: blocking writes (small, so the kernel buffers them).
struct RawClient {
  RawClient(asio::io_context& io, std::uint16_t port) : socket(io) {
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  }
  void write(const std::vector<std::uint8_t>& bytes) { asio::write(socket, asio::buffer(bytes)); }
  tcp::socket socket;
};

v1::Envelope hello(std::uint32_t id, std::string cluster = "test", std::uint64_t dim = 1000) {
  v1::Envelope e;
  auto* h = e.mutable_hello();
  h->set_protocol_version(kProtocolVersion);
  h->set_cluster_id(std::move(cluster));
  h->set_node_id(id);
  h->set_model_dim(dim);
  h->set_config_digest("digest");
  return e;
}

TEST(Transport, HostileBytesAreCountedAndDropped) {
  Cluster c(2, 300ms);
  ASSERT_TRUE(c.runUntil([&] { return c.allConnected(); }));
  const auto& rejected = c[0].transport->stats().rejected;
  const auto count = [&](std::string_view name) {
    const Refusal r = kRefusals.parse(name).value();
    return rejected.contains(r) ? rejected.at(r) : 0;
  };

  RawClient oversized(c.io, c[0].port);
  oversized.write({0xff, 0xff, 0xff, 0x7f});
  RawClient garbage(c.io, c[0].port);
  garbage.write({5, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff});
  RawClient heartbeat_first(c.io, c[0].port);
  v1::Envelope beat;
  beat.mutable_heartbeat()->set_round(1);
  heartbeat_first.write(encodeFrame(beat));
  RawClient wrong_cluster(c.io, c[0].port);
  wrong_cluster.write(encodeFrame(hello(1, "other")));
  RawClient wrong_dim(c.io, c[0].port);
  wrong_dim.write(encodeFrame(hello(1, "test", 7)));
  RawClient stranger(c.io, c[0].port);
  stranger.write(encodeFrame(hello(42)));
  RawClient old_version(c.io, c[0].port);
  auto v2 = hello(1);
  v2.mutable_hello()->set_protocol_version(2);
  old_version.write(encodeFrame(v2));
  RawClient other_config(c.io, c[0].port);
  auto digest = hello(1);
  digest.mutable_hello()->set_config_digest("another");
  other_config.write(encodeFrame(digest));
  RawClient truncated(c.io, c[0].port);
  truncated.write({100, 0, 0, 0, 1, 2, 3});
  truncated.socket.close();
  RawClient silent(c.io, c[0].port);

  ASSERT_TRUE(c.runUntil([&] {
    return count("oversized") == 1 && count("malformed") == 1 && count("expected_hello") == 1 &&
           count("wrong_cluster") == 1 && count("wrong_dimension") == 1 &&
           count("unknown_node") == 1 && count("wrong_version") == 1 &&
           count("wrong_digest") == 1 && count("handshake_timeout") >= 1;
  })) << "oversized "
      << count("oversized") << " malformed " << count("malformed");
  // The refused Hello was answered with Goodbye(WRONG_CLUSTER) after ours.
  FrameReader reader(maxFrameBytes(1000));
  std::vector<std::uint8_t> buf(wrong_cluster.socket.available());
  asio::read(wrong_cluster.socket, asio::buffer(buf));
  reader.feed(buf);
  v1::Envelope first, second;
  ASSERT_EQ(reader.next(first), true);
  EXPECT_EQ(first.body_case(), v1::Envelope::kHello);
  ASSERT_EQ(reader.next(second), true);
  EXPECT_EQ(second.goodbye().reason(), v1::Goodbye::WRONG_CLUSTER);
  // The real neighbour never noticed.
  EXPECT_TRUE(c[0].up.contains(1));
  ASSERT_TRUE(c[1].transport->send(0, roundMessage(0, 1, "still fine")));
  ASSERT_TRUE(c.runUntil([&] { return c[0].received[1].size() == 1; }));
}

// Before its Hello is verified a connection cannot choose an allocation: a length prefix above
// the handshake bound is refused at once (a model-sized claim used to be allocated whole and
// kept until the socket closed), while the same length from an open neighbour is a frame.
TEST(Transport, ALengthClaimedBeforeTheHelloCannotChooseTheAllocation) {
  const std::uint64_t dim = 1u << 20;  // frames of up to ~8 MB once open
  ASSERT_GT(maxFrameBytes(dim), 16 * kMaxHandshakeFrameBytes);
  Cluster c(2, 2000ms, dim);
  ASSERT_TRUE(c.runUntil([&] { return c.allConnected(); }));
  const auto& rejected = c[0].transport->stats().rejected;
  const auto oversized = [&] {
    const Refusal r = kRefusals.parse("oversized").value();
    return rejected.contains(r) ? rejected.at(r) : 0;
  };
  const auto claim = std::uint32_t(maxFrameBytes(dim));
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int k = 0; k < 64; ++k) {
    clients.push_back(std::make_unique<RawClient>(c.io, c[0].port));
    clients.back()->write({std::uint8_t(claim), std::uint8_t(claim >> 8), std::uint8_t(claim >> 16),
                           std::uint8_t(claim >> 24)});
  }
  // Refused on the prefix alone: the clients never send a body, so a node that waited for one
  // would count nothing here.
  ASSERT_TRUE(c.runUntil([&] { return oversized() == 64; })) << oversized();
  // A neighbour's frame of that size still arrives whole.
  const std::string big(std::size_t(kMaxHandshakeFrameBytes) * 4, 'x');
  ASSERT_TRUE(c[1].transport->send(0, roundMessage(0, 1, big)));
  ASSERT_TRUE(c.runUntil([&] { return c[0].received[1].size() == 1; }));
  EXPECT_EQ(c[0].received[1][0].payload().size(), big.size());
}

// This process's resident memory, in bytes.
std::size_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * std::size_t(::sysconf(_SC_PAGESIZE));
}

// What a declared length alone costs before a Hello: 64 sockets each declaring the largest frame
// a connection may before its Hello, then sending a few bytes of it and nothing more. Buffers
// grow with the bytes that came, so the node holds a few KiB per socket, not the 64 KiB each
// declared — and what it held is freed when they close.
TEST(Transport, SixtyFourDeclaredFramesBeforeAHelloCostLessThanTheirSize) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow and quarantine are not the node's memory";
#endif
  Cluster c(2, 5000ms, 1u << 20);
  ASSERT_TRUE(c.runUntil([&] { return c.allConnected(); }));
  c.runFor(100ms);
  const std::size_t start = residentBytes();
  const auto declared = std::uint32_t(kMaxHandshakeFrameBytes);
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int k = 0; k < 64; ++k) {
    clients.push_back(std::make_unique<RawClient>(c.io, c[0].port));
    std::vector<std::uint8_t> bytes{std::uint8_t(declared), std::uint8_t(declared >> 8),
                                    std::uint8_t(declared >> 16), std::uint8_t(declared >> 24)};
    bytes.resize(bytes.size() + 100, 0x5a);  // the body's start, never its end
    clients.back()->write(bytes);
  }
  c.runFor(300ms);
  const std::size_t held = residentBytes();
  const auto& rejected = c[0].transport->stats().rejected;
  EXPECT_FALSE(rejected.contains(kRefusals.parse("oversized").value()));  // all were accepted
  for (auto& client : clients) client->socket.close();
  clients.clear();
  c.runFor(300ms);
  const std::size_t after = residentBytes();
  std::printf("RSS: start %zu KiB, 64 declared frames held %zu KiB (+%zd), closed %zu KiB\n",
              start >> 10, held >> 10, (std::ptrdiff_t(held) - std::ptrdiff_t(start)) >> 10,
              after >> 10);
  EXPECT_LT(held, start + 64 * kMaxHandshakeFrameBytes);
  EXPECT_LT(after, start + start / 10);
}

TEST(Transport, APeerSpeakingForAnotherIsIgnored) {
  // Node 0 expects neighbours 1 and 2; a raw client that says it is 2 and then sends as 1.
  Cluster c(3);
  ASSERT_TRUE(c.runUntil([&] { return c.allConnected(); }));
  c[2].transport->abort();
  ASSERT_TRUE(c.runUntil([&] { return !c[0].up.contains(2); }));
  RawClient liar(c.io, c[0].port);
  liar.write(encodeFrame(hello(2)));
  ASSERT_TRUE(c.runUntil([&] { return c[0].up.contains(2); }));
  liar.write(encodeFrame(roundMessage(0, 1, "forged")));
  const auto& rejected = c[0].transport->stats().rejected;
  ASSERT_TRUE(c.runUntil([&] { return rejected.contains(Refusal::kSenderMismatch); }));
  EXPECT_TRUE(c[0].received[1].empty());
  EXPECT_TRUE(c[0].received[2].empty());
}

TEST(Transport, AFloodOfConnectionsIsSurvived) {
  Cluster c(2, 200ms);
  ASSERT_TRUE(c.runUntil([&] { return c.allConnected(); }));
  std::vector<std::unique_ptr<RawClient>> flood;
  for (int i = 0; i < 150; ++i) flood.push_back(std::make_unique<RawClient>(c.io, c[0].port));
  const auto& rejected = c[0].transport->stats().rejected;
  const auto count = [&](std::string_view name) {
    const Refusal r = kRefusals.parse(name).value();
    return rejected.contains(r) ? rejected.at(r) : 0;
  };
  ASSERT_TRUE(
      c.runUntil([&] { return count("handshake_timeout") + count("pending_evicted") >= 150; }));
  EXPECT_GT(count("pending_evicted"), 0u);  // at most 64 waited for a Hello at once
  ASSERT_TRUE(c[1].transport->send(0, roundMessage(0, 1, "through the flood")));
  ASSERT_TRUE(c.runUntil([&] { return c[0].received[1].size() == 1; }));
}

TEST(Transport, ANeighbourReconnectsThroughAFloodThatHoldsEveryPendingSlot) {
  // 500 idle sockets from the neighbour's own address (loopback) reach node 1 while node 0
  // restarts: at the cap a newcomer evicts the oldest pending socket instead of being refused,
  // so the neighbour's handshake (one round trip) gets through.
  Cluster c(2, 2000ms);
  ASSERT_TRUE(c.runUntil([&] { return c.allConnected(); }));
  const std::uint16_t port = c[0].port;
  c[0].transport->abort();
  ASSERT_TRUE(c.runUntil([&] { return !c[1].up.contains(0); }));
  std::vector<std::unique_ptr<RawClient>> flood;
  const auto& rejected = c[1].transport->stats().rejected;
  for (int i = 0; i < 250; ++i) flood.push_back(std::make_unique<RawClient>(c.io, c[1].port));
  // Every pending slot is held (the flood has begun evicting) before the neighbour dials.
  ASSERT_TRUE(c.runUntil([&] { return rejected.contains(Refusal::kPendingEvicted); }));
  c.start(0, port);
  c.connect(0);
  for (int i = 0; i < 250; ++i) flood.push_back(std::make_unique<RawClient>(c.io, c[1].port));
  ASSERT_TRUE(c.runUntil([&] { return c[0].up.contains(1) && c[1].up.contains(0); }));
  ASSERT_TRUE(c[0].transport->send(1, roundMessage(0, 0, "back")));
  ASSERT_TRUE(c.runUntil([&] { return !c[1].received[0].empty(); }));
}

TEST(Transport, ARefusedDuplicateDeliversNothing) {
  // Without TLS an impersonator can say it is node 1 while node 1 is connected: the connection
  // it opens is refused as a duplicate, and nothing it sends (a keyframe with a huge sequence, a
  // heartbeat from the far future) reaches node 0's round logic.
  Cluster c(2, 200ms);
  ASSERT_TRUE(c.runUntil([&] { return c.allConnected(); }));
  std::vector<std::uint64_t> heartbeats;
  RawClient impostor(c.io, c[0].port);
  impostor.write(encodeFrame(hello(1)));
  v1::Envelope forged = roundMessage(0, 1, "forged");
  forged.mutable_round()->set_sequence(1'000'000);
  impostor.write(encodeFrame(forged));
  v1::Envelope beat;
  beat.mutable_heartbeat()->set_round(std::uint64_t(1) << 62);
  impostor.write(encodeFrame(beat));
  const auto& rejected = c[0].transport->stats().rejected;
  ASSERT_TRUE(c.runUntil([&] { return rejected.contains(Refusal::kNotPairConnection); }));
  EXPECT_TRUE(c[0].received[1].empty());
  ASSERT_TRUE(c[1].transport->send(0, roundMessage(0, 1, "genuine")));
  ASSERT_TRUE(c.runUntil([&] { return c[0].received[1].size() == 1; }));
  EXPECT_EQ(c[0].received[1][0].payload(), "genuine");
}

TEST(Transport, ALargeFrameStreamingLongerThanTheLivenessTimeoutKeepsItsConnection) {
  // A 32 MB model frame arriving over at least 3 s (500 pieces, the loop run 6 ms after each) on
  // a link too busy for heartbeats: every megabyte that comes in is a sign of life, so the 2 s
  // liveness timeout does not cut the link. The frame is built before the handshake: built
  // after it, under TSan on a busy machine, the build used up the timeout between the hello and
  // the first megabyte.
  asio::io_context io;
  constexpr std::uint64_t kDim = 8'000'000;
  const auto frame = encodeFrame(roundMessage(0, 1, std::string(4 * kDim, 'x')));
  TransportConfig config{.self = 0,
                         .cluster_id = "test",
                         .model_dim = kDim,
                         .config_digest = "digest",
                         .neighbours = {1},
                         .heartbeat_every = 50ms,
                         .liveness_timeout = 2000ms};
  std::set<std::uint32_t> up;
  std::vector<std::string> downs;
  std::vector<std::size_t> delivered;
  TcpTransport t(
      io, config,
      {.on_round = [&](std::uint32_t, Received& m) { delivered.push_back(m.payload().size()); },
       .on_up = [&](std::uint32_t p) { up.insert(p); },
       .on_down = [&](std::uint32_t, std::string_view why) { downs.emplace_back(why); }});
  const auto port = t.listen();
  RawClient slow(io, port);
  slow.write(encodeFrame(hello(1, "test", kDim)));
  ASSERT_TRUE(testing::runUntil(io, [&] { return up.contains(1); }));
  constexpr std::size_t kPiece = 64 << 10;  // small: the kernel buffers it (one thread reads)
  for (std::size_t at = 0; at < frame.size(); at += kPiece) {
    const std::size_t n = std::min(kPiece, frame.size() - at);
    asio::write(slow.socket, asio::buffer(frame.data() + at, n));
    io.run_for(6ms);
    io.restart();
  }
  ASSERT_TRUE(testing::runUntil(io, [&] { return !delivered.empty(); }));
  EXPECT_EQ(delivered, std::vector<std::size_t>{4 * kDim});
  EXPECT_TRUE(downs.empty()) << downs.front();
  t.abort();
}

TEST(Transport, BytesWaitingInTheKernelAreASignOfLifeAfterABusyLoop) {
  // The loop was busy (a big mix, a starved thread) longer than the liveness timeout while the
  // peer's heartbeat sat unread in the socket: the peer is alive, the link stays.
  asio::io_context io;
  TransportConfig config{.self = 0,
                         .cluster_id = "test",
                         .model_dim = 1000,
                         .config_digest = "digest",
                         .neighbours = {1},
                         .heartbeat_every = 50ms,
                         .liveness_timeout = 300ms};
  std::set<std::uint32_t> up;
  std::vector<std::string> downs;
  TcpTransport t(
      io, config,
      {.on_up = [&](std::uint32_t p) { up.insert(p); },
       .on_down = [&](std::uint32_t, std::string_view why) { downs.emplace_back(why); }});
  const auto port = t.listen();
  RawClient peer(io, port);
  peer.write(encodeFrame(hello(1)));
  ASSERT_TRUE(testing::runUntil(io, [&] { return up.contains(1); }));
  v1::Envelope beat;
  beat.mutable_heartbeat()->set_round(0);
  peer.write(encodeFrame(beat));
  std::this_thread::sleep_for(600ms);  // the loop does not run: its timer and the read are due
  io.run_for(100ms);
  io.restart();
  EXPECT_TRUE(downs.empty()) << downs.front();
  EXPECT_TRUE(up.contains(1));
  t.abort();
}

TEST(Transport, ASlowPeerHitsTheQueueBoundNotMemory) {
  // A neighbour that handshakes and then never reads: sends fail once the queue is full.
  asio::io_context io;
  TransportConfig config{.self = 0,
                         .cluster_id = "test",
                         .model_dim = 1'000'000,
                         .config_digest = "digest",
                         .neighbours = {1},
                         .max_queued_bytes = 1 << 20};
  std::set<std::uint32_t> up;
  TcpTransport t(io, config, {.on_up = [&](std::uint32_t p) { up.insert(p); }});
  const auto port = t.listen();
  RawClient lazy(io, port);
  lazy.write(encodeFrame(hello(1, "test", 1'000'000)));
  ASSERT_TRUE(testing::runUntil(io, [&] { return up.contains(1); }));
  int accepted = 0;
  for (int i = 0; i < 2000; ++i) {
    if (t.send(1, roundMessage(0, 0, std::string(64 << 10, 'x')))) ++accepted;
    io.poll();
    io.restart();
  }
  EXPECT_LT(accepted, 2000);
  EXPECT_GT(t.stats().peers.at(1).dropped_sends, 0u);
  t.abort();
}

// The one dispatch every transport shares: each message kind to its handler, nothing for the
// link's own kinds or an empty body (the caller refuses those); an unset handler drops quietly.
TEST(Transport, EnvelopesGoToTheirHandlersAndTheLinksOwnKindsToNone) {
  std::vector<std::string> seen;
  TransportHandlers h{
      .on_resync = [&](std::uint32_t p,
                       const v1::ResyncRequest&) { seen.push_back("resync " + std::to_string(p)); },
      .on_heartbeat =
          [&](std::uint32_t p, std::uint64_t r) {
            seen.push_back("heartbeat " + std::to_string(p) + " " + std::to_string(r));
          },
      .on_digest = [&](std::uint32_t p,
                       const v1::RoundDigest&) { seen.push_back("digest " + std::to_string(p)); }};
  v1::Envelope e;
  EXPECT_FALSE(dispatchEnvelope(h, 1, e));  // no body
  e.mutable_hello();
  EXPECT_FALSE(dispatchEnvelope(h, 1, e));
  e.mutable_goodbye();
  EXPECT_FALSE(dispatchEnvelope(h, 1, e));
  e.mutable_round();
  EXPECT_FALSE(dispatchEnvelope(h, 1, e));
  e.mutable_resync();
  EXPECT_TRUE(dispatchEnvelope(h, 2, e));
  e.mutable_heartbeat()->set_round(7);
  EXPECT_TRUE(dispatchEnvelope(h, 3, e));
  e.mutable_digest();
  EXPECT_TRUE(dispatchEnvelope(h, 4, e));
  e.mutable_coalition();
  EXPECT_TRUE(dispatchEnvelope(h, 5, e));  // no handler: dropped
  EXPECT_EQ(seen, (std::vector<std::string>{"resync 2", "heartbeat 3 7", "digest 4"}));
}

TEST(Transport, FilteredHandlersPassOnlyWhatTheFiltersLetThrough) {
  std::vector<std::string> seen;
  TransportHandlers h{
      .on_heartbeat = [&](std::uint32_t p,
                          std::uint64_t) { seen.push_back("heartbeat " + std::to_string(p)); },
      .on_up = [&](std::uint32_t p) { seen.push_back("up " + std::to_string(p)); },
      .on_down = [&](std::uint32_t p,
                     std::string_view) { seen.push_back("down " + std::to_string(p)); }};
  const TransportHandlers f = filteredHandlers(
      h, [](std::uint32_t p) { return p != 1; }, [](std::uint32_t p) { return p != 2; });
  EXPECT_FALSE(f.on_round);  // absent stays absent
  EXPECT_FALSE(f.on_resync);
  f.on_heartbeat(1, 0);
  f.on_heartbeat(2, 0);
  f.on_up(1);
  f.on_up(2);
  f.on_down(2, "gone");
  f.on_down(3, "gone");
  EXPECT_EQ(seen, (std::vector<std::string>{"heartbeat 2", "up 1", "down 3"}));
}

}  // namespace
}  // namespace phalanx::net
