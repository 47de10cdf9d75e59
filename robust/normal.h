// The standard normal quantile Φ⁻¹, for ALIE's z. Pure; thread-safe.
#pragma once

namespace phalanx::robust {

// Φ⁻¹(p) for p in (0, 1), accurate to about 1e-14; NaN outside (0, 1).
double inverseNormalCdf(double p);

}  // namespace phalanx::robust
