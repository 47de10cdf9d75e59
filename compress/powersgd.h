// PowerSGD (Vogels et al. 2019): per matrix-shaped layer, one power-iteration step of rank r
// from the previous call's Q (warm start; the first Q is seeded), sending P and Q; vectors
// and layers too small to gain go dense. Owned by one stream, one thread.
#pragma once

#include <expected>
#include <memory>
#include <string>

#include "compress/compressor.h"

namespace phalanx::compress {

// Errors: rank outside 1..255, or no layer shapes in c.layers.
std::expected<std::unique_ptr<Compressor>, std::string> makePowerSgd(const CompressorConfig& c);

}  // namespace phalanx::compress
