// Mutual TLS: certificates from net/certs.h (what `phalanx certs` writes), identity bound to the
// certificate.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <asio.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

#include "net/certs.h"
#include "net/frame.h"
#include "net/tcp_transport.h"
#include "tests/support/process.h"
#include "tests/support/run_until.h"
#include "tests/support/temp_dir.h"

namespace phalanx::net {
namespace {

using namespace std::chrono_literals;

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::uint32_t ids[] = {0, 1, 2, 3};
    const auto written = writeClusterCerts(dir_.path(), ids);
    ASSERT_TRUE(written) << written.error();
  }

  TlsFiles files(std::uint32_t cert_of) const {
    const auto p = [&](const std::string& f) { return (dir_.path() / f).string(); };
    return {.enabled = true,
            .ca = p("ca.pem"),
            .cert = p(fmt::format("node-{}.pem", cert_of)),
            .key = p(fmt::format("node-{}.key", cert_of))};
  }

  struct Node {
    std::unique_ptr<TcpTransport> t;
    std::set<std::uint32_t> up;
    std::vector<std::string> payloads;
    std::uint16_t port = 0;
  };

  // Node `id` presenting the certificate of `cert_of`, neighbour of every id in 0..3.
  std::unique_ptr<Node> make(std::uint32_t id, std::uint32_t cert_of, bool tls = true) {
    auto n = std::make_unique<Node>();
    TransportConfig c{.self = id,
                      .cluster_id = "tls",
                      .model_dim = 100,
                      .config_digest = "d",
                      .handshake_timeout = 1000ms,
                      .backoff_initial = 10ms,
                      .backoff_max = 100ms};
    for (std::uint32_t j = 0; j < 4; ++j) {
      if (j != id) c.neighbours.push_back(j);
    }
    if (tls) c.tls = files(cert_of);
    Node* raw = n.get();
    n->t = std::make_unique<TcpTransport>(
        io_, c,
        TransportHandlers{
            .on_round = [raw](std::uint32_t,
                              Received& m) { raw->payloads.push_back(m.whole().payload()); },
            .on_up = [raw](std::uint32_t p) { raw->up.insert(p); },
            .on_down = [raw](std::uint32_t p, std::string_view) { raw->up.erase(p); }});
    n->port = n->t->listen();
    return n;
  }

  template <typename Pred>
  bool runUntil(Pred done, std::chrono::milliseconds limit = 10s) {
    return testing::runUntil(io_, done, limit);
  }

  testing::TempDir dir_;
  asio::io_context io_;
};

TEST_F(TlsTest, PeersWithClusterCertificatesTalk) {
  auto a = make(0, 0), b = make(1, 1), c = make(2, 2);
  for (auto* n : {a.get(), b.get(), c.get()}) {
    n->t->connect(
        {{0, "127.0.0.1", a->port}, {1, "127.0.0.1", b->port}, {2, "127.0.0.1", c->port}});
  }
  ASSERT_TRUE(
      runUntil([&] { return a->up.size() == 2 && b->up.size() == 2 && c->up.size() == 2; }));
  v1::Envelope e;
  e.mutable_round()->set_sender(0);
  e.mutable_round()->set_kind(v1::RoundMessage::DELTA);
  e.mutable_round()->set_payload("secret");
  ASSERT_TRUE(a->t->send(2, e));
  ASSERT_TRUE(runUntil([&] { return c->payloads.size() == 1; }));
  EXPECT_EQ(c->payloads[0], "secret");
}

TEST_F(TlsTest, ACertificateCannotClaimAnotherId) {
  auto a = make(0, 0);
  auto liar = make(1, 3);  // says it is node 1, holds node 3's certificate
  liar->t->connect({{0, "127.0.0.1", a->port}});
  const auto& rejected = a->t->stats().rejected;
  ASSERT_TRUE(runUntil([&] { return rejected.contains(Refusal::kIdentityMismatch); }));
  EXPECT_FALSE(a->up.contains(1));
}

TEST_F(TlsTest, APlainPeerCannotJoinATlsCluster) {
  auto a = make(0, 0);
  auto plain = make(1, 1, /*tls=*/false);
  plain->t->connect({{0, "127.0.0.1", a->port}});
  const auto& rejected = a->t->stats().rejected;
  ASSERT_TRUE(runUntil([&] { return rejected.contains(Refusal::kTlsHandshake); }));
  EXPECT_TRUE(a->up.empty());
}

std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST_F(TlsTest, KeysAreTheOwnersOnlyAndMoreNodesJoinTheSameCa) {
  namespace fs = std::filesystem;
  const auto mode = [](const fs::path& f) { return fs::status(f).permissions() & fs::perms::all; };
  EXPECT_EQ(mode(nodeKeyFile(dir_.path(), 2)), fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(mode(caKeyFile(dir_.path())), fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(mode(dir_.path()), fs::perms::owner_all);
  // A fifth node added later: the CA stays, and it talks to the first four.
  const std::string ca_before = slurp(caCertFile(dir_.path()));
  const std::uint32_t late[] = {4};
  ASSERT_TRUE(writeClusterCerts(dir_.path(), late));
  EXPECT_EQ(slurp(caCertFile(dir_.path())), ca_before);
  auto a = make(0, 0);
  auto e = make(3, 4);  // node 3's id with node 4's certificate: the CA vouches, the id does not
  e->t->connect({{0, "127.0.0.1", a->port}});
  ASSERT_TRUE(
      runUntil([&] { return a->t->stats().rejected.contains(Refusal::kIdentityMismatch); }));
}

TEST_F(TlsTest, ACertificateFromAnotherClusterIsRefused) {
  testing::TempDir other;
  const std::uint32_t ids[] = {1};
  ASSERT_TRUE(writeClusterCerts(other.path(), ids));
  auto a = make(0, 0);
  TransportConfig c{
      .self = 1, .cluster_id = "tls", .model_dim = 100, .config_digest = "d", .neighbours = {0}};
  c.tls = {.enabled = true,
           .ca = caCertFile(other.path()).string(),
           .cert = nodeCertFile(other.path(), 1).string(),
           .key = nodeKeyFile(other.path(), 1).string()};
  TcpTransport t(io_, c, {});
  t.listen();
  t.connect({{0, "127.0.0.1", a->port}});
  ASSERT_TRUE(runUntil([&] { return a->t->stats().rejected.contains(Refusal::kTlsHandshake); }));
  EXPECT_TRUE(a->up.empty());
}

TEST_F(TlsTest, MissingKeyFilesFailAtStart) {
  TransportConfig c{.self = 0, .model_dim = 1, .neighbours = {1}};
  c.tls = {.enabled = true,
           .ca = "/nonexistent/ca.pem",
           .cert = "/nonexistent/c.pem",
           .key = "/nonexistent/k.pem"};
  TcpTransport t(io_, c, {});
  EXPECT_THROW(t.listen(), std::system_error);
}

}  // namespace
}  // namespace phalanx::net
