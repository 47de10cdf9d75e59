#include "net/asio_clock.h"

#include <cstdint>

namespace phalanx::net {
namespace {

class AsioTimer final : public Timer {
 public:
  explicit AsioTimer(asio::io_context& io) : timer_(io) {}
  ~AsioTimer() override { ++*generation_; }
  void start(std::chrono::nanoseconds after, std::function<void()> callback) override {
    const std::uint64_t mine = ++*generation_;
    timer_.expires_after(after);
    timer_.async_wait([generation = generation_, mine,
                       callback = std::move(callback)](const asio::error_code& ec) {
      // An expired wait is queued already and cannot be aborted: the generation tells.
      if (!ec && *generation == mine) callback();
    });
  }
  void cancel() override {
    ++*generation_;
    timer_.cancel();
  }

 private:
  asio::steady_timer timer_;
  std::shared_ptr<std::uint64_t> generation_ = std::make_shared<std::uint64_t>(0);
};

}  // namespace

std::unique_ptr<Timer> AsioClock::timer() { return std::make_unique<AsioTimer>(io_); }

}  // namespace phalanx::net
