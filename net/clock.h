// Time for the round loop: the steady "now", posted work and one-shot timers. net/asio_clock.h
// runs them on an asio::io_context in real time (the daemon); net/virtual_time.h in virtual time
// (`phalanx simulate`, the deterministic tests). Code above net/ never names std::chrono's clocks
// or asio's timers, so the same round code runs on both.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

namespace phalanx::net {

// A one-shot timer. start() replaces a pending callback; cancel() and destruction drop it.
// Callbacks run on the clock's thread (real time) or in their actor's turn (virtual time).
class Timer {
 public:
  virtual ~Timer() = default;
  virtual void start(std::chrono::nanoseconds after, std::function<void()> callback) = 0;
  virtual void cancel() = 0;
};

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  // Runs `task` later, after what is already due now.
  virtual void post(std::function<void()> task) = 0;
  virtual std::unique_ptr<Timer> timer() = 0;
};

inline double millisecondsBetween(Clock::TimePoint from, Clock::TimePoint to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace phalanx::net
