#include "node/http_endpoint.h"

#include <fmt/format.h>
#include <httplib.h>
#include <openssl/crypto.h>

#include <stdexcept>

#include "node/http_guard.h"
#include "node/npy.h"

namespace phalanx::node {

namespace {

bool loopback(const std::string& address) {
  return address.starts_with("127.") || address == "::1" || address.starts_with("::ffff:127.");
}

// Whether the request carries `token`, compared in constant time (CRYPTO_memcmp): how long a
// wrong guess takes says nothing about how much of it was right.
bool authorized(const httplib::Request& req, const std::string& token) {
  const std::string got = req.get_header_value("Authorization");
  const std::string want = "Bearer " + token;
  return got.size() == want.size() && CRYPTO_memcmp(got.data(), want.data(), want.size()) == 0;
}

}  // namespace

HttpEndpoint::HttpEndpoint(const std::string& host, std::uint16_t port, ModelSource model,
                           ControlAccess control, GuardLimits limits)
    : guard_(std::make_shared<ConnectionGuard>(limits)), server_(makeGuardedServer(guard_)) {
  // A command is a line; nothing this endpoint serves takes a larger body.
  server_->set_payload_max_length(64 * 1024);
  server_->Post("/control", [this, control](const httplib::Request& req, httplib::Response& res) {
    guard_->served(req.remote_addr, req.remote_port);
    if (control.token.empty() || !control.apply) {
      res.status = 404;
      res.set_content("no control endpoint: set control.token in the config\n", "text/plain");
    } else if (!control.remote && !loopback(req.remote_addr)) {
      res.status = 403;
      res.set_content("control requests are accepted from loopback only (control.remote)\n",
                      "text/plain");
    } else if (!authorized(req, control.token)) {
      res.status = 401;
      res.set_content("wrong or missing token\n", "text/plain");
    } else if (const auto command = parseFaultCommand(req.body); !command) {
      res.status = 400;
      res.set_content(command.error() + "\n", "text/plain");
    } else {
      const ControlAnswer answer = control.apply(*command);
      switch (answer.outcome) {
        case FaultOutcome::kApplied:
          res.set_content("ok\n", "text/plain");
          break;
        case FaultOutcome::kRefused:
          res.status = 400;
          res.set_content(answer.reason + "\n", "text/plain");
          break;
        case FaultOutcome::kNotAnswered:
          res.status = 504;
          res.set_content(
              "the node did not answer in time (busy or hung); the command is queued and may "
              "still apply\n",
              "text/plain");
          break;
      }
    }
  });
  server_->Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    guard_->served(req.remote_addr, req.remote_port);
    std::string body;
    {
      std::lock_guard lock(mutex_);
      body = metrics_;
    }
    res.set_content(body, "text/plain; version=0.0.4");
  });
  // The model is the node's work: only with the control token (from any address, so a monitor
  // on another host can compute consensus distances).
  server_->Get("/model", [this, model, token = control.token](const httplib::Request& req,
                                                              httplib::Response& res) {
    guard_->served(req.remote_addr, req.remote_port);
    if (token.empty()) {
      res.status = 404;
      res.set_content("no /model: set control.token in the config\n", "text/plain");
      return;
    }
    if (!authorized(req, token)) {
      res.status = 401;
      res.set_content("wrong or missing token\n", "text/plain");
      return;
    }
    const std::optional<std::vector<float>> values = model ? model() : std::nullopt;
    if (!values) {
      res.status = 503;
      res.set_content("the model is not available now (the node is busy or leaving)\n",
                      "text/plain");
      return;
    }
    const std::size_t shape[] = {values->size()};
    const std::vector<char> npy = encodeNpy(shape, *values);
    res.set_content(npy.data(), npy.size(), "application/octet-stream");
  });
  // SO_REUSEADDR, not httplib's default SO_REUSEPORT: with SO_REUSEPORT a second node could
  // bind the same metrics port without an error, and the TIME_WAIT connections this server
  // leaves would block later SO_REUSEADDR binds of that port (a transport port in the next run).
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  if (port == 0) {
    const int bound = server_->bind_to_any_port(host);
    if (bound <= 0) throw std::runtime_error(fmt::format("metrics endpoint: cannot bind {}", host));
    port_ = std::uint16_t(bound);
  } else {
    if (!server_->bind_to_port(host, port)) {
      throw std::runtime_error(
          fmt::format("metrics endpoint: cannot bind {}:{} (in use?)", host, port));
    }
    port_ = port;
  }
  widenBacklog(*server_, 512);
  thread_ = std::thread([this] { server_->listen_after_bind(); });
}

HttpEndpoint::~HttpEndpoint() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

void HttpEndpoint::publish(std::string metrics) {
  std::lock_guard lock(mutex_);
  metrics_ = std::move(metrics);
}

}  // namespace phalanx::node
