#include "node/exchange/accordion_step.h"

#include <algorithm>
#include <string>
#include <vector>

namespace phalanx::node {

AccordionStep::AccordionStep(std::unique_ptr<compress::AccordionController> controller,
                             compress::AdaptiveCompressor* adaptive, std::uint64_t window)
    : controller_(std::move(controller)), adaptive_(adaptive), window_(window) {}

AccordionStep::Outcome AccordionStep::step(std::uint64_t t, train::Learner& learner,
                                           spdlog::logger& log) {
  const std::span<const float> g = learner.lastGradient();
  std::size_t offset = 0;
  const auto layers = learner.layers();
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const std::size_t n = layers[l].rows * layers[l].cols;
    controller_->accumulate(l, g.subspan(offset, n));
    offset += n;
  }
  if ((t + 1) % window_ != 0) return {};
  const bool dropped = learner.learningRate(t + 1) < learner.learningRate(t + 1 - window_);
  const auto before = std::vector(adaptive_->levelsInUse().begin(), adaptive_->levelsInUse().end());
  const auto levels = controller_->endWindow(dropped);
  adaptive_->setLevels(levels);
  low_layers_ = double(std::count(levels.begin(), levels.end(), compress::Level::kLow));
  if (std::equal(levels.begin(), levels.end(), before.begin(), before.end()))
    return {.window_ended = true};
  std::string text;
  for (const auto level : levels) text += level == compress::Level::kLow ? 'L' : 'H';
  log.info("round {}: accordion levels per layer now {} (L: less compression)", t, text);
  return {.window_ended = true, .changed = true};
}

}  // namespace phalanx::node
