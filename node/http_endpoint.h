// The node's HTTP side (DESIGN.md "Files": metrics): Prometheus text at GET /metrics, served
// by cpp-httplib on its own thread from the text the round loop publishes after every round (so
// a busy or hung loop still answers), and the parameters as a float32 .npy at GET /model (with
// the control token as a bearer token; 404 when none is configured), taken from the loop only when
// asked (copying the model every round would cost the loop a full read and write of it, 100 MB
// at 25.6M parameters). Optionally POST /control (body: a fault, node/fault_command.h) with a
// bearer token, from loopback only unless told otherwise. /metrics is open to whoever reaches the
// port (bind the metrics port to loopback, or firewall it, where counters are private). Slow and
// flooding clients are held off by node/http_guard.h: a request must be in within 2 s, and an
// address's 17th unfinished one evicts its oldest.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "node/fault_command.h"
#include "node/http_guard.h"

namespace httplib {
class Server;
}

namespace phalanx::node {

// Returns the model, or nullopt when it cannot now (GET /model answers 503). HTTP thread.
using ModelSource = std::function<std::optional<std::vector<float>>()>;

// What became of a command: applied; refused, and why; or not answered in time (busy or hung:
// the command stays queued and may apply later).
struct ControlAnswer {
  FaultOutcome outcome = FaultOutcome::kApplied;
  std::string reason;  // kRefused
};

struct ControlAccess {
  std::string token;    // empty: no /control
  bool remote = false;  // accept requests from addresses other than loopback
  // Applies one command, parsed from the request's body. On the HTTP thread.
  std::function<ControlAnswer(const FaultCommand& command)> apply;
};

class HttpEndpoint {
 public:
  // Binds host:port (0: any free port); throws std::runtime_error naming the address when it
  // cannot. Serves until destroyed. POST /control answers 200 (applied), 400 (a command that does
  // not parse, or one the node refused),
  // 401 (wrong or missing token), 403 (not from loopback), 404 (no token configured), 504 (the
  // node did not answer in time).
  HttpEndpoint(const std::string& host, std::uint16_t port, ModelSource model,
               ControlAccess control = {}, GuardLimits limits = {});
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  std::uint16_t port() const { return port_; }
  // Connections evicted or still reading their request (the guard's counts).
  const ConnectionGuard& guard() const { return *guard_; }

  // Replaces what /metrics serves. Thread-safe.
  void publish(std::string metrics);

 private:
  std::shared_ptr<ConnectionGuard> guard_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::uint16_t port_ = 0;
  std::mutex mutex_;
  std::string metrics_;
};

}  // namespace phalanx::node
