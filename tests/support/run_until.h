// Drives an io_context in short slices until a condition holds or a time limit passes, for
// in-process network tests (STYLE.md: io.run_for, never sleep). Returns the condition.
#pragma once

#include <asio.hpp>
#include <chrono>

namespace phalanx::testing {

template <typename Pred>
bool runUntil(asio::io_context& io, Pred done,
              std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    io.run_for(std::chrono::milliseconds(5));
    io.restart();
  }
  return done();
}

}  // namespace phalanx::testing
