// The HTTP endpoint's defence against slow and many clients (docs/PROTOCOL.md "The HTTP
// endpoint"): cpp-httplib serves each connection on a thread and waits on a slow one as long as
// it keeps sending, so 64 sockets with unfinished headers used to hold every thread and starve
// /control. Here each connection gets its own thread, must deliver its whole request within a
// deadline, and an address may hold only so many connections whose request is not in yet — the
// next one from it evicts its oldest (as the transport does with handshakes), so a client that
// sends its request at once, /control from inject, is served whatever a flood holds.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace httplib {
class Server;
}

namespace phalanx::node {

struct GuardLimits {
  std::chrono::milliseconds request_deadline{2000};  // headers and body, from accept
  std::chrono::milliseconds write_stall{10000};      // a write that makes no progress this long
  std::size_t pending_per_address = 16;              // connections whose request is not in yet
  std::size_t pending_total = 256;
};

// Which connections are still reading their request, by socket, and whom to evict. No I/O of
// its own beyond shutting down the sockets it evicts (their threads' reads then end). Every
// method is thread-safe.
class ConnectionGuard {
 public:
  explicit ConnectionGuard(GuardLimits limits) : limits_(limits) {}

  // A new connection from `address`:`port`. Over a limit, the oldest pending connection of the
  // address (or of all, for the total) is shut down. Returns the sockets it shut down.
  std::vector<int> admit(int fd, const std::string& address, int port);
  // The request of the connection from `address`:`port` is in (its handler runs): it no longer
  // counts against the limits and is never evicted.
  void served(const std::string& address, int port);
  // The connection is closing: forget it (before its socket is closed, so no reused number is
  // ever shut down by mistake).
  void closed(int fd);
  // Shuts down every connection still reading (the server is stopping).
  void shutdownPending();

  std::size_t pending() const;
  std::uint64_t evicted() const;
  const GuardLimits& limits() const { return limits_; }

 private:
  struct Entry {
    std::string address;
    int port = 0;
    std::uint64_t order = 0;  // admission order: lower is older
    bool pending = true;
  };
  void evictOldest(const std::string* address, std::vector<int>& shut);  // under mutex_

  GuardLimits limits_;
  mutable std::mutex mutex_;
  std::map<int, Entry> by_fd_;
  std::uint64_t next_order_ = 0;
  std::uint64_t evicted_ = 0;
};

// cpp-httplib's server, each connection on its own thread behind a ConnectionGuard. Use it as an
// httplib::Server (routes, bind, listen_after_bind, stop); handlers call guard().served().
std::unique_ptr<httplib::Server> makeGuardedServer(std::shared_ptr<ConnectionGuard> guard);
// After it is bound: room for `backlog` connections waiting to be accepted. The library listens
// with 5, so a burst of connections (a flood, or a scraper's) overflowed it and every connection
// behind it, /control's too, waited out SYN retransmits (1 s, 2 s, ...): 128 sockets took 18 s
// to connect.
void widenBacklog(httplib::Server& guarded, int backlog);

}  // namespace phalanx::node
