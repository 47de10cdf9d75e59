// Vectors that stand alone on the wire (GRADIENT messages: standalone gradients, the hub's
// broadcast), decoded whole into one row per sender for the round's rule; nothing is kept in
// sequence, so a lost message costs only its round.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "net/round_gate.h"
#include "node/exchange/exchange_context.h"

namespace phalanx::node {

class DecodedRows {
 public:
  DecodedRows(ExchangeContext context, std::size_t dim) : context_(context), dim_(dim) {}

  // The round's GRADIENT messages decoded; returns their senders in arrival order. Any other
  // kind, or a payload that does not decode, is counted and left out.
  std::vector<std::uint32_t> receive(net::RoundResult& result);
  // `peer`'s vector as last decoded (empty: never heard).
  std::span<const float> rowOf(std::uint32_t peer) const;

 private:
  ExchangeContext context_;
  std::size_t dim_;
  std::map<std::uint32_t, std::vector<float>> rows_;
};

}  // namespace phalanx::node
