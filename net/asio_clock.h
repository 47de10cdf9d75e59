// Real time on one asio::io_context (the daemon's clock): every callback runs on the thread that
// runs the io_context; a timer's cancelled or superseded wait never calls back.
#pragma once

#include <asio.hpp>
#include <functional>
#include <memory>

#include "net/clock.h"

namespace phalanx::net {

class AsioClock final : public Clock {
 public:
  explicit AsioClock(asio::io_context& io) : io_(io) {}
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  void post(std::function<void()> task) override { asio::post(io_, std::move(task)); }
  std::unique_ptr<Timer> timer() override;

 private:
  asio::io_context& io_;
};

}  // namespace phalanx::net
