#include "node/exchange/outer_exchange.h"

namespace phalanx::node {

template class OuterExchange<ModelExchange>;
template class OuterExchange<GradientExchange>;

}  // namespace phalanx::node
