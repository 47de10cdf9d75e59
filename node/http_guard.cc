#include "node/http_guard.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <functional>
#include <thread>

namespace phalanx::node {

std::vector<int> ConnectionGuard::admit(int fd, const std::string& address, int port) {
  std::vector<int> shut;
  std::lock_guard lock(mutex_);
  std::size_t from_address = 0, total = 0;
  for (const auto& [_, e] : by_fd_) {
    if (!e.pending) continue;
    ++total;
    if (e.address == address) ++from_address;
  }
  if (from_address >= limits_.pending_per_address) evictOldest(&address, shut);
  if (total - shut.size() >= limits_.pending_total) evictOldest(nullptr, shut);
  by_fd_[fd] = Entry{address, port, next_order_++, true};
  return shut;
}

void ConnectionGuard::evictOldest(const std::string* address, std::vector<int>& shut) {
  auto oldest = by_fd_.end();
  for (auto it = by_fd_.begin(); it != by_fd_.end(); ++it) {
    if (!it->second.pending || (address && it->second.address != *address)) continue;
    if (oldest == by_fd_.end() || it->second.order < oldest->second.order) oldest = it;
  }
  if (oldest == by_fd_.end()) return;
  // Shut down, not closed: the connection's thread still owns the number and closes it.
  ::shutdown(oldest->first, SHUT_RDWR);
  oldest->second.pending = false;
  shut.push_back(oldest->first);
  ++evicted_;
}

void ConnectionGuard::served(const std::string& address, int port) {
  std::lock_guard lock(mutex_);
  for (auto& [_, e] : by_fd_) {
    if (e.pending && e.port == port && e.address == address) e.pending = false;
  }
}

void ConnectionGuard::closed(int fd) {
  std::lock_guard lock(mutex_);
  by_fd_.erase(fd);
}

void ConnectionGuard::shutdownPending() {
  std::lock_guard lock(mutex_);
  for (auto& [fd, e] : by_fd_) {
    if (e.pending) ::shutdown(fd, SHUT_RDWR);
  }
}

std::size_t ConnectionGuard::pending() const {
  std::lock_guard lock(mutex_);
  return std::size_t(
      std::count_if(by_fd_.begin(), by_fd_.end(), [](const auto& p) { return p.second.pending; }));
}

std::uint64_t ConnectionGuard::evicted() const {
  std::lock_guard lock(mutex_);
  return evicted_;
}

namespace {

using Clock = std::chrono::steady_clock;

// The address and port of a socket's peer (remote) or its own end (local).
void endpointOf(int fd, bool remote, std::string& ip, int& port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  const int got = remote ? getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
                         : getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ip.clear();
  port = 0;
  if (got != 0) return;
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    port = ntohs(v6->sin6_port);
  }
  ip = text;
}

// Waits until `fd` can be read (or written) or `until` passes. True when it can.
bool waitFor(int fd, short events, Clock::time_point until) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, int(std::min<long long>(left.count(), 1 << 30)));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

// A socket whose reads all end by one deadline (the request's: reads happen only while the
// request comes in) and whose writes end when one makes no progress for write_stall.
class DeadlineStream final : public httplib::Stream {
 public:
  DeadlineStream(int fd, Clock::time_point read_until, std::chrono::milliseconds write_stall)
      : fd_(fd), read_until_(read_until), write_stall_(write_stall) {}

  bool is_readable() const override { return waitFor(fd_, POLLIN, read_until_); }
  bool is_writable() const override { return waitFor(fd_, POLLOUT, Clock::now() + write_stall_); }
  ssize_t read(char* ptr, size_t size) override {
    if (!is_readable()) return -1;
    for (;;) {
      const ssize_t n = ::recv(fd_, ptr, size, 0);
      if (n >= 0 || errno != EINTR) return n;
    }
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    for (;;) {
      const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
      if (n >= 0 || errno != EINTR) return n;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    endpointOf(fd_, true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    endpointOf(fd_, false, ip, port);
  }
  socket_t socket() const override { return fd_; }

 private:
  int fd_;
  Clock::time_point read_until_;
  std::chrono::milliseconds write_stall_;
};

// One thread per connection, so a slow one holds only its own; shutdown() waits for them all.
// The count they share outlives the queue: the last thread may still be leaving its lock when
// shutdown() returns and the server deletes the queue.
class ThreadPerConnection final : public httplib::TaskQueue {
 public:
  explicit ThreadPerConnection(std::shared_ptr<ConnectionGuard> guard)
      : guard_(std::move(guard)), running_(std::make_shared<Running>()) {}
  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard lock(running_->mutex);
      ++running_->count;
    }
    std::thread([running = running_, fn = std::move(fn)] {
      fn();
      std::lock_guard lock(running->mutex);
      if (--running->count == 0) running->idle.notify_all();
    }).detach();
  }
  void shutdown() override {
    guard_->shutdownPending();
    std::unique_lock lock(running_->mutex);
    running_->idle.wait(lock, [this] { return running_->count == 0; });
  }

 private:
  struct Running {
    std::mutex mutex;
    std::condition_variable idle;
    std::size_t count = 0;
  };
  std::shared_ptr<ConnectionGuard> guard_;
  std::shared_ptr<Running> running_;
};

class GuardedServer final : public httplib::Server {
 public:
  explicit GuardedServer(std::shared_ptr<ConnectionGuard> guard) : guard_(std::move(guard)) {
    new_task_queue = [guard = guard_] { return new ThreadPerConnection(guard); };
  }

 private:
  bool process_and_close_socket(socket_t sock) override {
    const Clock::time_point read_until = Clock::now() + guard_->limits().request_deadline;
    std::string ip;
    int port = 0;
    endpointOf(sock, true, ip, port);
    guard_->admit(sock, ip, port);
    DeadlineStream stream(sock, read_until, guard_->limits().write_stall);
    bool connection_closed = false;
    // One request per connection: a kept-alive one would be a slow client's second chance.
    const bool ok = process_request(stream, /*close_connection=*/true, connection_closed, nullptr);
    guard_->closed(sock);
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ok;
  }

  std::shared_ptr<ConnectionGuard> guard_;

  friend void phalanx::node::widenBacklog(httplib::Server&, int);
};

}  // namespace

std::unique_ptr<httplib::Server> makeGuardedServer(std::shared_ptr<ConnectionGuard> guard) {
  return std::make_unique<GuardedServer>(std::move(guard));
}

void widenBacklog(httplib::Server& guarded, int backlog) {
  // listen() on a listening socket sets its backlog anew (Linux).
  ::listen(static_cast<GuardedServer&>(guarded).svr_sock_, backlog);
}

}  // namespace phalanx::node
