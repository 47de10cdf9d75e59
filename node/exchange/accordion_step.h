// Accordion (compression.adaptive, ALGORITHMS.md §3.4) as a round sees it: each round's local
// gradient goes into the window, per layer; at the window's end the controller picks each layer's
// level (LOW: less compression, where the gradient's norm changed by more than eta or the
// learning rate dropped) and the adaptive codec switches to it.
#pragma once

#include <spdlog/logger.h>

#include <cstdint>
#include <memory>

#include "compress/accordion.h"
#include "train/learner.h"

namespace phalanx::node {

class AccordionStep {
 public:
  // `adaptive`: the codec whose levels it sets (owned elsewhere); `window`: rounds per window.
  AccordionStep(std::unique_ptr<compress::AccordionController> controller,
                compress::AdaptiveCompressor* adaptive, std::uint64_t window);

  // Round t's local gradient (the learner's last) into the window. At the window's end, the new
  // levels, logged when they changed (the consensus step's estimate then starts over).
  struct Outcome {
    bool window_ended = false, changed = false;
  };
  Outcome step(std::uint64_t t, train::Learner& learner, spdlog::logger& log);
  // Layers at the LOW level now.
  double lowLayers() const { return low_layers_; }

 private:
  std::unique_ptr<compress::AccordionController> controller_;
  compress::AdaptiveCompressor* adaptive_;
  std::uint64_t window_;
  double low_layers_ = 0;
};

}  // namespace phalanx::node
