// The metrics and control endpoint (node/http_endpoint.h) over real HTTP: metrics for anyone,
// the model and control behind the token.
#include "node/http_endpoint.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

// Last: it pulls in <resolv.h>, whose _res macro breaks Eigen's headers.
#include <httplib.h>

namespace phalanx::node {
namespace {

TEST(HttpEndpoint, ServesMetricsModelAndGuardsControl) {
  std::vector<std::string> applied;
  const std::vector<float> model{1.5f, -2.0f};
  HttpEndpoint http("127.0.0.1", 0, [&] { return std::optional<std::vector<float>>(model); },
                    {.token = "s3cret", .apply = [&](const FaultCommand& command) -> ControlAnswer {
                       if (std::holds_alternative<fault::Hang>(command))  // the loop did not answer
                         return {.outcome = FaultOutcome::kNotAnswered};
                       if (std::holds_alternative<fault::SwitchAttack>(command))
                         return {.outcome = FaultOutcome::kRefused, .reason = "no attack here"};
                       applied.push_back(faultText(command));
                       return {};
                     }});
  http.publish("phalanx_round{node=\"0\"} 3\n");
  httplib::Client client("127.0.0.1", http.port());
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->body, "phalanx_round{node=\"0\"} 3\n");
  EXPECT_EQ(client.Get("/model")->status, 401);  // the model needs the token
  EXPECT_EQ(client.Get("/model", httplib::Headers{{"Authorization", "Bearer nope"}})->status, 401);
  // As long as the token, or its prefix: refused all the same (compared in constant time).
  for (const char* guess : {"Bearer s3creX", "Bearer s3cre", "Bearer s3cret0"})
    EXPECT_EQ(client.Get("/model", httplib::Headers{{"Authorization", guess}})->status, 401);
  auto npy = client.Get("/model", httplib::Headers{{"Authorization", "Bearer s3cret"}});
  ASSERT_TRUE(npy);
  EXPECT_EQ(npy->status, 200);
  EXPECT_EQ(npy->body.substr(1, 5), "NUMPY");
  EXPECT_EQ(npy->body.size() % 16, 8u);  // 16-aligned header, then two floats
  EXPECT_EQ(client.Post("/control", "slow 10", "text/plain")->status, 401);
  httplib::Headers auth{{"Authorization", "Bearer s3cret"}};
  EXPECT_EQ(client
                .Post("/control", httplib::Headers{{"Authorization", "Bearer nope"}}, "slow 10",
                      "text/plain")
                ->status,
            401);
  EXPECT_EQ(client.Post("/control", auth, "bad", "text/plain")->status, 400);  // does not parse
  const auto refused = client.Post("/control", auth, "attack alie", "text/plain");
  EXPECT_EQ(refused->status, 400);  // parsed, refused by the node: the reason comes back
  EXPECT_EQ(refused->body, "no attack here\n");
  EXPECT_EQ(client.Post("/control", auth, "hang 3", "text/plain")->status, 504);  // not "applied"
  EXPECT_EQ(client.Post("/control", auth, "slow 10", "text/plain")->status, 200);
  EXPECT_EQ(applied, std::vector<std::string>{"slow 10"});
  HttpEndpoint closed("127.0.0.1", 0, {});
  httplib::Client other("127.0.0.1", closed.port());
  EXPECT_EQ(other.Post("/control", auth, "slow 10", "text/plain")->status, 404);
}

TEST(ConnectionGuard, AnAddressHoldsAtMostItsQuotaOfUnfinishedRequestsAndTheOldestGoes) {
  ConnectionGuard guard({.pending_per_address = 3, .pending_total = 5});
  // Numbers no socket has here: shutting them down fails harmlessly.
  EXPECT_TRUE(guard.admit(1001, "10.0.0.1", 1).empty());
  EXPECT_TRUE(guard.admit(1002, "10.0.0.1", 2).empty());
  EXPECT_TRUE(guard.admit(1003, "10.0.0.1", 3).empty());
  EXPECT_EQ(guard.admit(1004, "10.0.0.1", 4), std::vector<int>{1001});  // its oldest
  // A request that is in no longer counts, and is never evicted.
  guard.served("10.0.0.1", 2);
  EXPECT_TRUE(guard.admit(1005, "10.0.0.1", 5).empty());
  EXPECT_EQ(guard.pending(), 3u);
  // Other addresses have their own quota, under the total: the oldest of all goes.
  EXPECT_TRUE(guard.admit(2001, "10.0.0.2", 1).empty());
  EXPECT_TRUE(guard.admit(2002, "10.0.0.2", 2).empty());
  EXPECT_EQ(guard.admit(3001, "10.0.0.3", 1), std::vector<int>{1003});
  EXPECT_EQ(guard.evicted(), 2u);
  guard.closed(1004);
  guard.closed(1005);
  EXPECT_EQ(guard.pending(), 3u);
}

// A socket to the endpoint from `source` (any 127/8 address is loopback here) that sends the
// start of a request and never its end.
int slowClient(std::uint16_t port, const char* source) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from), 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  const std::string start = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  EXPECT_EQ(::send(fd, start.data(), start.size(), MSG_NOSIGNAL), ssize_t(start.size()));
  return fd;
}

// Whether the server closed `fd` (reads reach its end, after whatever it answered) within a
// generous 30 s.
bool closedByServer(int fd) {
  timeval t{.tv_sec = 30, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
  char buffer[512];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
}

// Whether the server has closed `fd` by now (end of stream or reset), without waiting; what it
// sent before is read and dropped. Once closed, it stays so.
bool closedNow(int fd) {
  char buffer[512];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
  }
}

TEST(HttpEndpoint, SlowlorisSocketsDoNotStarveControlAndAreEvictedOrTimedOut) {
  // A request deadline no test waits out: /control must answer while the slow sockets are
  // still held, not after they time out.
  int applied = 0;
  HttpEndpoint http("127.0.0.1", 0, {},
                    {.token = "s3cret",
                     .apply = [&](const FaultCommand&) -> ControlAnswer {
                       ++applied;
                       return {};
                     }},
                    {.request_deadline = std::chrono::seconds(600)});
  // Closed on every way out: a held socket keeps the server's worker, and so its destructor, for
  // the whole 600 s deadline — an early failed assertion would hang the test instead.
  struct Sockets {
    std::vector<int> fds;
    ~Sockets() {
      for (const int fd : fds) ::close(fd);
    }
  } held;
  std::vector<int>& slow = held.fds;
  // 64 from another host's address, 64 from the operator's own.
  for (int i = 0; i < 64; ++i) slow.push_back(slowClient(http.port(), "127.0.0.2"));
  for (int i = 0; i < 64; ++i) slow.push_back(slowClient(http.port(), "127.0.0.1"));
  // The operator's request counts against its own address's 16 too: sent while the server is
  // still taking in its slow sockets (a loaded machine), it can be among the oldest and be
  // evicted (CI: "Write"). Wait, generously, until the server has seen them all.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (http.guard().evicted() < 2u * (64 - 16) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  httplib::Client client("127.0.0.1", http.port());
  client.set_read_timeout(30, 0);
  const httplib::Headers auth{{"Authorization", "Bearer s3cret"}};
  const auto answer = client.Post("/control", auth, "slow 10", "text/plain");
  ASSERT_TRUE(answer) << httplib::to_string(answer.error());
  EXPECT_EQ(answer->status, 200);
  EXPECT_EQ(applied, 1);
  const auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  // Each address keeps its 16 newest unfinished requests; the rest are shut down, the oldest
  // first.
  EXPECT_LE(http.guard().pending(), 32u);
  EXPECT_GE(http.guard().evicted(), 2u * (64 - 16));
  // Which ones went is the server's order of taking them in (its worker threads'), not the order
  // they connected in: count the closed ones of each address, not particular sockets.
  const auto closedOf = [&](std::size_t first) {
    std::size_t closed = 0;
    for (std::size_t k = first; k < first + 64; ++k) closed += closedNow(slow[k]);
    return closed;
  };
  std::size_t closed_other = 0, closed_own = 0;
  const auto by = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do {
    closed_other = closedOf(0);
    closed_own = closedOf(64);
    if (closed_other >= 48 && closed_own >= 48) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < by);
  // At most 16 held per address (the operator's own requests count against its quota too).
  EXPECT_GE(closed_other, 48u);
  EXPECT_GE(closed_own, 48u);

  // With a short deadline, an unfinished request is cut off.
  HttpEndpoint strict("127.0.0.1", 0, {}, {}, {.request_deadline = std::chrono::milliseconds(200)});
  const int fd = slowClient(strict.port(), "127.0.0.1");
  EXPECT_TRUE(closedByServer(fd));
  ::close(fd);
}

}  // namespace
}  // namespace phalanx::node
