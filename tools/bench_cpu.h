// `phalanx bench aggregate|compress|attack|digest`: Google Benchmark suites of the rules, codecs
// and coalition searches at realistic sizes, each with its ratio to a floor timed in the same run.
#pragma once

namespace phalanx::tools {

// Every rule at n in {8, 32}, d in {1M, 25.6M} beside a memory-read floor (--quick: tiny sizes).
void registerAggregateBenchmarks(bool quick);
// Every codec's encode and decode beside the same floor.
void registerCompressBenchmarks(bool quick);
// opt_alie / opt_foe line searches against NNA and cs_plus_pt, shared and per colluder.
void registerAttackBenchmarks(bool quick);
// The statements' vector digest (BLAKE3) beside OpenSSL's SHA-256 and a memory-read floor.
void registerDigestBenchmarks(bool quick);

}  // namespace phalanx::tools
