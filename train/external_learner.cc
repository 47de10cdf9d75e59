#include "train/external_learner.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "train/train_config.h"

namespace phalanx::train {

ExternalLearner::ExternalLearner(std::size_t dimension, std::vector<compress::LayerShape> layers)
    : dimension_(dimension), layers_(std::move(layers)), params_(dimension), gradient_(dimension) {
  if (dimension_ == 0) throw base::ConfigError("external learner: the parameter vector is empty");
  if (layers_.empty()) layers_.push_back({dimension_, 1});
  std::size_t total = 0;
  for (const auto& l : layers_) total += l.size();
  if (total != dimension_) {
    throw base::ConfigError(fmt::format(
        "external learner: the layers hold {} values, the parameter vector {}", total, dimension_));
  }
}

ExternalLearner::Answer ExternalLearner::submit(std::span<float> vector, double loss) {
  std::function<void()> wake, evaluated;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return Answer::kFinished;
    if (in_flight_) {
      throw std::invalid_argument("exchange: the previous vector is still being mixed");
    }
    if (vector.size() != dimension_) {
      throw std::invalid_argument(fmt::format(
          "exchange: a vector of {} values; this peer was made for {}", vector.size(), dimension_));
    }
    caller_ = vector;
    loss_ = loss;
    in_flight_ = true;
    taken_ = false;
    evaluation_due_ = false;  // the loop went on without reporting
    last_answer_ = Answer::kPending;
    wake = std::move(wake_);
    wake_ = nullptr;
    evaluated = std::move(evaluated_wake_);
    evaluated_wake_ = nullptr;
  }
  // Outside the lock: they post onto the node's clock.
  if (evaluated) evaluated();
  if (wake) wake();
  return Answer::kPending;
}

ExternalLearner::Answer ExternalLearner::await(std::chrono::milliseconds limit) {
  std::unique_lock lock(mutex_);
  answered_cv_.wait_for(lock, limit, [this] { return !in_flight_; });
  if (in_flight_) return Answer::kPending;
  return last_answer_;
}

void ExternalLearner::withdraw() {
  std::lock_guard lock(mutex_);
  if (!in_flight_ || caller_.empty() || caller_.data() == inbox_.data()) return;
  if (taken_) {
    caller_ = {};  // the node has its copy; the mix goes nowhere
    return;
  }
  inbox_.assign(caller_.begin(), caller_.end());
  caller_ = inbox_;
}

void ExternalLearner::report(Evaluation e) {
  std::function<void()> wake;
  {
    std::lock_guard lock(mutex_);
    reported_ = e;
    evaluation_due_ = false;
    wake = std::move(evaluated_wake_);
    evaluated_wake_ = nullptr;
  }
  if (wake) wake();
}

bool ExternalLearner::evaluated(std::function<void()> wake) {
  std::lock_guard lock(mutex_);
  if (!evaluation_due_ || stopped_) return true;
  evaluated_wake_ = std::move(wake);
  return false;
}

bool ExternalLearner::evaluationDue() const {
  std::lock_guard lock(mutex_);
  return evaluation_due_ && !stopped_;
}

bool ExternalLearner::stopped() const {
  std::lock_guard lock(mutex_);
  return stopped_;
}

std::uint64_t ExternalLearner::roundsMixed() const {
  std::lock_guard lock(mutex_);
  return rounds_mixed_;
}

bool ExternalLearner::ready(std::function<void()> wake) {
  std::lock_guard lock(mutex_);
  if (in_flight_ && !taken_) return true;
  if (!stopped_) wake_ = std::move(wake);
  return false;
}

double ExternalLearner::take(std::vector<float>& into) {
  std::lock_guard lock(mutex_);
  if (!in_flight_ || taken_) return std::numeric_limits<double>::quiet_NaN();  // not ready()
  std::copy(caller_.begin(), caller_.end(), into.begin());
  taken_ = true;
  return loss_;
}

double ExternalLearner::step(std::uint64_t) { return take(params_); }

double ExternalLearner::gradient(std::uint64_t) { return take(gradient_); }

void ExternalLearner::applyAggregate(std::uint64_t, std::span<const float> aggregate) {
  std::copy(aggregate.begin(), aggregate.end(), params_.begin());
}

void ExternalLearner::roundDone(std::uint64_t, bool evaluation_due) {
  std::lock_guard lock(mutex_);
  if (!in_flight_) return;
  if (taken_) {
    // The one copy out (none when the loop withdrew after the node took its vector).
    if (!caller_.empty()) std::copy(params_.begin(), params_.end(), caller_.begin());
    last_answer_ = Answer::kMixed;
    evaluation_due_ = evaluation_due;  // set before the loop wakes: it reads it next
    ++rounds_mixed_;
  } else {
    last_answer_ = Answer::kPassed;  // a Byzantine node's round: it never takes the vector
  }
  in_flight_ = taken_ = false;
  caller_ = {};
  answered_cv_.notify_all();
}

void ExternalLearner::finished() {
  std::lock_guard lock(mutex_);
  stopped_ = true;
  if (in_flight_) last_answer_ = Answer::kFinished;
  in_flight_ = false;
  caller_ = {};
  wake_ = nullptr;
  evaluated_wake_ = nullptr;  // the node stopped: nothing waits for a report
  answered_cv_.notify_all();
}

double ExternalLearner::learningRate(std::uint64_t) const {
  return std::numeric_limits<double>::quiet_NaN();
}

std::optional<Evaluation> ExternalLearner::evaluation(const Dataset*, bool) {
  std::lock_guard lock(mutex_);
  auto out = reported_;
  reported_.reset();
  return out;
}

}  // namespace phalanx::train
