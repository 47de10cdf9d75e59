// exchange: outer (ALGORITHMS.md §3.7): H local steps around a model or gradient exchange. A
// round remembers x, takes outer.steps local steps, and sends either the model (the gossip's
// target then becomes the outer step's: D = x_start − x after the consensus step) or the
// pseudo-gradient Δ = x_start − x (mixed into D); the outer optimizer (outer_loop.h) steps from
// x_start with D.
#pragma once

#include <type_traits>

#include "node/exchange/gradient_exchange.h"
#include "node/exchange/model_exchange.h"
#include "node/exchange/outer_loop.h"

namespace phalanx::node {

template <class Inner>
class OuterExchange : public Inner {
  static_assert(std::is_same_v<Inner, ModelExchange> || std::is_same_v<Inner, GradientExchange>);

 public:
  // `args`: the inner exchange's.
  template <class... Args>
  explicit OuterExchange(std::unique_ptr<OuterLoop> outer, Args&&... args)
      : Inner(std::forward<Args>(args)...), outer_(std::move(outer)) {}

  std::uint64_t stepsPerRound() const override { return outer_->steps(); }
  std::uint64_t firstStep(std::uint64_t t) const override { return outer_->firstStep(t); }
  std::optional<std::uint64_t> recordedSteps(std::uint64_t t) const override {
    return outer_->firstStep(t + 1);
  }

  double send(std::uint64_t t, bool spam) override {
    train::Learner& learner = this->context_.learner;
    outer_->begin(learner.parameters());
    double loss = 0;
    for (std::uint64_t h = 0; h < outer_->steps(); ++h)
      loss = learner.step(outer_->firstStep(t) + h);
    if constexpr (std::is_same_v<Inner, ModelExchange>) {
      this->publish(t, learner.parameters(), spam);
    } else {
      this->sendGradient(t, outer_->pseudoGradient(learner.parameters()), spam);
    }
    return loss;
  }

  void apply(std::uint64_t t, std::span<const float> mixed, RoundRecord& record) override {
    const std::span<float> x = this->context_.learner.parameters();
    if constexpr (std::is_same_v<Inner, ModelExchange>) {
      Inner::apply(t, mixed, record);
      outer_->apply(outer_->pseudoGradient(x), x);
    } else {
      outer_->apply(mixed, x);
    }
  }

  void save(train::Checkpoint& c) const override {
    Inner::save(c);
    outer_->save(c);
  }
  void restore(const train::Checkpoint& c) override {
    Inner::restore(c);
    outer_->restore(c);
  }

 private:
  std::unique_ptr<OuterLoop> outer_;
};

extern template class OuterExchange<ModelExchange>;
extern template class OuterExchange<GradientExchange>;

}  // namespace phalanx::node
