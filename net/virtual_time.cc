#include "net/virtual_time.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace phalanx::net {
namespace {

// Timers are generations: start() and cancel() move it on, and an event of an older one is a
// no-op. The state outlives the timer (events may still hold it).
class VirtualTimer final : public Timer {
 public:
  VirtualTimer(VirtualScheduler& scheduler, std::uint32_t actor, Clock& clock)
      : scheduler_(scheduler), actor_(actor), clock_(clock) {}
  ~VirtualTimer() override { ++*generation_; }
  void start(std::chrono::nanoseconds after, std::function<void()> callback) override {
    const std::uint64_t mine = ++*generation_;
    scheduler_.schedule(actor_, actor_, clock_.now() + std::max(after, std::chrono::nanoseconds(0)),
                        [generation = generation_, mine, callback = std::move(callback)] {
                          if (*generation == mine) callback();
                        });
  }
  void cancel() override { ++*generation_; }

 private:
  VirtualScheduler& scheduler_;
  std::uint32_t actor_;
  Clock& clock_;
  std::shared_ptr<std::uint64_t> generation_ = std::make_shared<std::uint64_t>(0);
};

class VirtualClock final : public Clock {
 public:
  VirtualClock(VirtualScheduler& scheduler, std::uint32_t actor, const TimePoint& now)
      : scheduler_(scheduler), actor_(actor), now_(now) {}
  TimePoint now() const override { return now_; }
  void post(std::function<void()> task) override {
    scheduler_.schedule(actor_, actor_, now_, std::move(task));
  }
  std::unique_ptr<Timer> timer() override {
    return std::make_unique<VirtualTimer>(scheduler_, actor_, *this);
  }

 private:
  VirtualScheduler& scheduler_;
  std::uint32_t actor_;
  const TimePoint& now_;
};

}  // namespace

struct VirtualScheduler::Actor {
  Actor(VirtualScheduler& s, std::uint32_t id) : clock(s, id, now) {}
  std::vector<Event> heap;  // a min-heap on (at, origin, sequence)
  Clock::TimePoint now{};
  std::uint64_t sequence = 0;
  std::vector<std::pair<std::uint32_t, Event>> outbox;  // to other actors, merged after a window
  std::exception_ptr failure;
  std::uint64_t ran = 0;  // events run in the current window
  VirtualClock clock;
};

namespace {
template <typename E>
bool later(const E& a, const E& b) {
  return std::tie(a.at, a.origin, a.sequence) > std::tie(b.at, b.origin, b.sequence);
}
}  // namespace

VirtualScheduler::VirtualScheduler(std::size_t actors, Duration lookahead, unsigned threads,
                                   std::function<void()> thread_init)
    : lookahead_(lookahead) {
  if (lookahead <= Duration(0)) throw std::invalid_argument("virtual time: lookahead must be > 0");
  for (std::uint32_t i = 0; i < actors; ++i) actors_.push_back(std::make_unique<Actor>(*this, i));
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned t = 1; t < threads; ++t) {
    workers_.emplace_back([this, thread_init] { workerLoop(thread_init); });
  }
}

VirtualScheduler::~VirtualScheduler() {
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

Clock& VirtualScheduler::clock(std::uint32_t actor) { return actors_.at(actor)->clock; }

void VirtualScheduler::push(Actor& actor, Event event) {
  actor.heap.push_back(std::move(event));
  std::push_heap(actor.heap.begin(), actor.heap.end(), later<Event>);
}

void VirtualScheduler::schedule(std::uint32_t from, std::uint32_t to, Clock::TimePoint at,
                                std::function<void()> task) {
  Actor& target = *actors_.at(to);
  if (from == kOutside) {
    if (running_) throw std::logic_error("virtual time: scheduling from outside during a run");
    push(target, {at, kOutside, outside_sequence_++, std::move(task)});
    return;
  }
  Actor& origin = *actors_.at(from);
  Event e{std::max(at, origin.now), from, origin.sequence++, std::move(task)};
  if (from == to || !running_) {
    push(target, std::move(e));
  } else {
    // Another actor may be running now: its queue is touched after the window. The lookahead
    // guarantees the event lies beyond the window, so nothing is reordered.
    e.at = std::max(e.at, origin.now + lookahead_);
    origin.outbox.emplace_back(to, std::move(e));
  }
}

void VirtualScheduler::runActor(std::uint32_t index, Clock::TimePoint window_end) {
  Actor& a = *actors_[index];
  try {
    while (!a.heap.empty() && a.heap.front().at < window_end) {
      std::pop_heap(a.heap.begin(), a.heap.end(), later<Event>);
      Event e = std::move(a.heap.back());
      a.heap.pop_back();
      a.now = e.at;
      ++a.ran;
      e.task();
    }
  } catch (...) {
    a.failure = std::current_exception();
  }
}

VirtualScheduler::Outcome VirtualScheduler::run(const std::function<bool()>& stop,
                                                Clock::TimePoint until) {
  std::vector<std::uint32_t> due;
  while (true) {
    if (stop && stop()) return Outcome::kStopped;
    Clock::TimePoint first = Clock::TimePoint::max();
    for (const auto& a : actors_) {
      if (!a->heap.empty()) first = std::min(first, a->heap.front().at);
    }
    if (first == Clock::TimePoint::max()) return Outcome::kIdle;
    if (first > until) return Outcome::kTimeLimit;
    now_ = first;
    const Clock::TimePoint window_end = first + lookahead_;
    due.clear();
    for (std::uint32_t i = 0; i < actors_.size(); ++i) {
      if (!actors_[i]->heap.empty() && actors_[i]->heap.front().at < window_end) due.push_back(i);
    }
    running_ = true;
    parallelFor(due.size(), [&](std::size_t k) { runActor(due[k], window_end); });
    running_ = false;
    ++windows_;
    // Merge what the window sent, and fail on the first (lowest) actor's exception.
    std::exception_ptr failure;
    for (const std::uint32_t i : due) {
      Actor& a = *actors_[i];
      for (auto& [to, e] : a.outbox) push(*actors_[to], std::move(e));
      a.outbox.clear();
      if (a.failure && !failure) failure = std::exchange(a.failure, nullptr);
      events_run_ += std::exchange(a.ran, 0);
    }
    if (failure) std::rethrow_exception(failure);
  }
}

void VirtualScheduler::parallelFor(std::size_t count,
                                   const std::function<void(std::size_t)>& body) {
  if (workers_.empty() || count <= 1) {
    for (std::size_t k = 0; k < count; ++k) body(k);
    return;
  }
  std::unique_lock lock(mutex_);
  job_ = &body;
  job_count_ = count;
  job_next_ = 0;
  job_busy_ = 0;
  ++job_generation_;
  wake_.notify_all();
  while (job_next_ < job_count_) {
    const std::size_t k = job_next_++;
    ++job_busy_;
    lock.unlock();
    body(k);
    lock.lock();
    --job_busy_;
  }
  done_.wait(lock, [&] { return job_busy_ == 0; });
  job_ = nullptr;
}

void VirtualScheduler::workerLoop(const std::function<void()>& init) {
  if (init) init();
  std::uint64_t seen = 0;
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return quit_ || (job_ && job_generation_ != seen); });
    if (quit_) return;
    seen = job_generation_;
    while (job_ && job_next_ < job_count_) {
      const std::size_t k = job_next_++;
      ++job_busy_;
      const auto* body = job_;
      lock.unlock();
      (*body)(k);
      lock.lock();
      if (--job_busy_ == 0 && job_next_ >= job_count_) done_.notify_all();
    }
  }
}

}  // namespace phalanx::net
