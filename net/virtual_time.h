// Virtual time for many actors in one process (DESIGN.md "Simulation"): every actor (a peer) has
// its own Clock; events run in the total order (time, origin actor, origin's sequence), so a run
// is the same every time whatever the thread count. Events are run in windows of the lookahead
// (the smallest delay with which one actor can reach another: the links' minimum latency):
// within a window no actor can affect another, so the actors due in it run in parallel, and what
// they send to each other is merged into the queues after it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "net/clock.h"

namespace phalanx::net {

class VirtualScheduler {
 public:
  using Duration = std::chrono::nanoseconds;
  // `threads` workers (0: the hardware's); `thread_init` runs once on each worker.
  VirtualScheduler(std::size_t actors, Duration lookahead, unsigned threads = 0,
                   std::function<void()> thread_init = {});
  ~VirtualScheduler();
  VirtualScheduler(const VirtualScheduler&) = delete;
  VirtualScheduler& operator=(const VirtualScheduler&) = delete;

  // Actor `actor`'s clock: now() is the time of the event it is running.
  Clock& clock(std::uint32_t actor);

  // Runs `task` as actor `to` at `at`. From inside actor `from`'s event (to == from, at >= its
  // now; or to != from, at >= its now + the lookahead), or from outside a run (from: kOutside).
  static constexpr std::uint32_t kOutside = 0xFFFFFFFFu;
  void schedule(std::uint32_t from, std::uint32_t to, Clock::TimePoint at,
                std::function<void()> task);

  enum class Outcome { kStopped, kIdle, kTimeLimit };
  // Runs windows until `stop` (asked between windows) says so, no event is left, or the next
  // event is past `until`. An exception thrown by an event is rethrown here, after its window.
  Outcome run(const std::function<bool()>& stop, Clock::TimePoint until = Clock::TimePoint::max());

  // The start of the last window run (the earliest time any actor could still act).
  Clock::TimePoint now() const { return now_; }
  std::uint64_t eventsRun() const { return events_run_; }
  std::uint64_t windows() const { return windows_; }
  std::size_t actors() const { return actors_.size(); }
  unsigned threads() const { return unsigned(workers_.size()) + 1; }

 private:
  struct Event {
    Clock::TimePoint at;
    std::uint32_t origin;
    std::uint64_t sequence;
    std::function<void()> task;
  };
  struct Actor;
  void push(Actor& actor, Event event);
  void runActor(std::uint32_t index, Clock::TimePoint window_end);
  void parallelFor(std::size_t count, const std::function<void(std::size_t)>& body);
  void workerLoop(const std::function<void()>& init);

  std::vector<std::unique_ptr<Actor>> actors_;
  Duration lookahead_;
  bool running_ = false;
  Clock::TimePoint now_{};
  std::uint64_t outside_sequence_ = 0;
  std::uint64_t events_run_ = 0, windows_ = 0;

  // The worker pool: one job at a time, the calling thread takes part.
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(std::size_t)>* job_ = nullptr;
  std::size_t job_count_ = 0, job_next_ = 0, job_busy_ = 0;
  std::uint64_t job_generation_ = 0;
  bool quit_ = false;
};

}  // namespace phalanx::net
