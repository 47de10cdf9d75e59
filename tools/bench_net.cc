#include "tools/bench_net.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <asio.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <optional>
#include <thread>
#include <vector>

#include "net/certs.h"
#include "net/tcp_transport.h"
#include "tools/command.h"

namespace phalanx::tools {
namespace {

using Clock = std::chrono::steady_clock;
using asio::ip::tcp;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The baseline: plain blocking sockets, a 4-byte length then the bytes, one thread per end.
double rawGbps(const NetBenchOptions& o) {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const auto port = acceptor.local_endpoint().port();
  std::vector<std::uint8_t> payload(o.bytes, 0x5a);
  auto receiver = std::async(std::launch::async, [&] {
    tcp::socket s = acceptor.accept();
    std::vector<std::uint8_t> in;
    for (int r = 0; r < o.repeats; ++r) {
      std::uint32_t n = 0;
      asio::read(s, asio::buffer(&n, 4));
      in.resize(n);  // a fresh message each time, as a receiver must keep it
      asio::read(s, asio::buffer(in));
      asio::write(s, asio::buffer(&n, 1));  // ack
    }
  });
  tcp::socket s(io);
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  double best = 1e300;
  for (int r = 0; r < o.repeats; ++r) {
    const auto start = Clock::now();
    const std::uint32_t n = std::uint32_t(o.bytes);
    asio::write(s, asio::buffer(&n, 4));
    asio::write(s, asio::buffer(payload));
    std::uint8_t ack = 0;
    asio::read(s, asio::buffer(&ack, 1));
    best = std::min(best, seconds(Clock::now() - start));
  }
  receiver.get();
  return double(o.bytes) * 8 / best / 1e9;
}

// Two transports, each on its own io_context thread, exchanging RoundMessages.
struct Pair {
  asio::io_context io_a, io_b;
  std::unique_ptr<net::TcpTransport> a, b;
  std::promise<void> connected;
  std::function<void(std::uint32_t, net::Received&)> on_b, on_a;
  std::thread ta, tb;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> wa, wb;

  // certs: a directory from net::writeClusterCerts for a TLS pair; empty for plain TCP.
  explicit Pair(std::uint64_t dim, const std::string& certs = {}) {
    const auto config = [dim, &certs](std::uint32_t self, std::uint32_t other) {
      net::TransportConfig c{.self = self,
                             .cluster_id = "bench",
                             .model_dim = dim,
                             .config_digest = "d",
                             .neighbours = {other},
                             .max_queued_bytes = std::size_t(16 * dim + (64u << 20)),
                             .liveness_timeout = std::chrono::milliseconds(60000)};
      if (!certs.empty()) {
        c.tls = {.enabled = true,
                 .ca = certs + "/ca.pem",
                 .cert = fmt::format("{}/node-{}.pem", certs, self),
                 .key = fmt::format("{}/node-{}.key", certs, self)};
      }
      return c;
    };
    std::promise<void> up_a, up_b;
    auto fa = up_a.get_future(), fb = up_b.get_future();
    a = std::make_unique<net::TcpTransport>(
        io_a, config(0, 1),
        net::TransportHandlers{
            .on_round = [this](std::uint32_t p, net::Received& m) { on_a(p, m); },
            .on_up = [p = std::make_shared<std::promise<void>>(std::move(up_a))](
                         std::uint32_t) { p->set_value(); }});
    b = std::make_unique<net::TcpTransport>(
        io_b, config(1, 0),
        net::TransportHandlers{
            .on_round = [this](std::uint32_t p, net::Received& m) { on_b(p, m); },
            .on_up = [p = std::make_shared<std::promise<void>>(std::move(up_b))](
                         std::uint32_t) { p->set_value(); }});
    const auto pa = a->listen(), pb = b->listen();
    a->connect({{1, "127.0.0.1", pb}});
    b->connect({{0, "127.0.0.1", pa}});
    wa.emplace(io_a.get_executor());
    wb.emplace(io_b.get_executor());
    ta = std::thread([this] { io_a.run(); });
    tb = std::thread([this] { io_b.run(); });
    fa.wait();
    fb.wait();
  }

  ~Pair() {
    asio::post(io_a, [this] { a->stop(); });
    asio::post(io_b, [this] { b->stop(); });
    wa.reset();
    wb.reset();
    io_a.stop();
    io_b.stop();
    ta.join();
    tb.join();
  }

  // Runs f on a's thread.
  void onA(std::function<void()> f) { asio::post(io_a, std::move(f)); }
};

net::v1::Envelope message(std::uint32_t sender, std::uint64_t round, std::string payload) {
  net::v1::Envelope e;
  auto* m = e.mutable_round();
  m->set_round(round);
  m->set_sender(sender);
  m->set_kind(net::v1::RoundMessage::DELTA);
  m->set_payload(std::move(payload));
  return e;
}

double transportGbps(const NetBenchOptions& o, const std::string& certs = {}) {
  Pair pair(o.bytes / 4 + 1, certs);
  std::promise<void>* arrived = nullptr;
  pair.on_b = [&](std::uint32_t, net::Received&) { arrived->set_value(); };
  pair.on_a = [](std::uint32_t, net::Received&) {};
  // The payload is shared with the transport, as the node shares one encoded delta.
  const auto payload =
      std::make_shared<const std::vector<std::uint8_t>>(o.bytes, std::uint8_t('Z'));
  double best = 1e300;
  for (int r = 0; r < o.repeats; ++r) {
    std::promise<void> done;
    arrived = &done;
    const auto start = Clock::now();
    pair.onA([&pair, &payload, r] {
      net::v1::RoundMessage header;
      header.set_round(std::uint64_t(r));
      header.set_sender(0);
      header.set_kind(net::v1::RoundMessage::DELTA);
      pair.a->sendRound(1, header, payload);
    });
    done.get_future().wait();
    best = std::min(best, seconds(Clock::now() - start));
    spdlog::debug("transport{} repeat {}: {:.1f} ms", certs.empty() ? "" : " (TLS)", r,
                  seconds(Clock::now() - start) * 1e3);
  }
  return double(o.bytes) * 8 / best / 1e9;
}

double rttMicrosP50(const NetBenchOptions& o) {
  Pair pair(1024);
  std::promise<void>* back = nullptr;
  pair.on_b = [&](std::uint32_t, net::Received& m) {
    pair.b->send(0, message(1, m.round(), "pong"));
  };
  pair.on_a = [&](std::uint32_t, net::Received&) { back->set_value(); };
  std::vector<double> rtts;
  for (int i = 0; i < o.pings; ++i) {
    std::promise<void> done;
    back = &done;
    const auto start = Clock::now();
    pair.onA([&pair, i] { pair.a->send(1, message(0, std::uint64_t(i), "ping")); });
    done.get_future().wait();
    rtts.push_back(seconds(Clock::now() - start) * 1e6);
  }
  std::nth_element(rtts.begin(), rtts.begin() + std::ptrdiff_t(rtts.size() / 2), rtts.end());
  return rtts[rtts.size() / 2];
}

// Certificates for the TLS run's two peers, in a fresh temporary folder; empty when they could
// not be written.
std::string makeCerts() {
  const auto dir =
      std::filesystem::temp_directory_path() / fmt::format("phalanx-bench-certs-{}", ::getpid());
  const std::uint32_t ids[] = {0, 1};
  if (auto written = net::writeClusterCerts(dir, ids); !written) {
    spdlog::warn("bench net: {}", written.error());
    return {};
  }
  return dir.string();
}

}  // namespace

int runNetBench(const NetBenchOptions& o) {
  if (o.bytes == 0 || o.bytes > (1u << 30)) {
    spdlog::error("--bytes must be in 1..1073741824");
    return kExitBadInput;
  }
  const double raw = rawGbps(o);
  const double plain = transportGbps(o);
  const std::string certs = makeCerts();
  std::optional<double> tls;
  if (certs.empty()) {
    spdlog::warn("bench net: no TLS run");
  } else {
    tls = transportGbps(o, certs);
    std::filesystem::remove_all(certs);
  }
  const double rtt = rttMicrosP50(o);
  const std::string tls_json = tls ? fmt::format("{:.3f}", *tls) : "null";
  if (o.json) {
    fmt::print(
        "{{\"bytes\": {}, \"raw_gbps\": {:.3f}, \"plain_gbps\": {:.3f}, \"plain_vs_raw\": "
        "{:.3f}, "
        "\"tls_gbps\": {}, \"rtt_us_p50\": {:.1f}}}\n",
        o.bytes, raw, plain, plain / raw, tls_json, rtt);
  } else {
    fmt::print(
        "{:.1f} MB messages over loopback: raw sockets {:.2f} Gbit/s, transport {:.2f} Gbit/s "
        "({:.0f}% of raw), with TLS {} Gbit/s; round trip p50 {:.1f} us\n",
        double(o.bytes) / 1e6, raw, plain, 100 * plain / raw, tls_json, rtt);
  }
  return kExitOk;
}

}  // namespace phalanx::tools
