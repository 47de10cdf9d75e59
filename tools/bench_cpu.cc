#include "tools/bench_cpu.h"

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <openssl/evp.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compress/compressor.h"
#include "compress/decode.h"
#include "net/signing.h"
#include "robust/aggregator.h"
#include "robust/attacks.h"

namespace phalanx::tools {
namespace {

using Clock = std::chrono::steady_clock;

// n rows of d floats in one allocation, filled with cheap deterministic noise.
struct RowSet {
  std::vector<float> storage;
  std::vector<std::span<const float>> rows;
};

const RowSet& rowSet(std::size_t n, std::size_t d) {
  static std::map<std::pair<std::size_t, std::size_t>, std::unique_ptr<RowSet>> cache;
  auto& slot = cache[{n, d}];
  if (!slot) {
    slot = std::make_unique<RowSet>();
    slot->storage.resize(n * d);
    float* data = slot->storage.data();
    const long total = long(n * d);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < total; ++i) {
      std::uint32_t x = std::uint32_t(i) * 2654435761u + 12345u;
      x ^= x >> 15;
      data[i] = float(x & 0xffff) / 65536.0f - 0.5f;
    }
    for (std::size_t k = 0; k < n; ++k) slot->rows.emplace_back(data + k * d, d);
  }
  return *slot;
}

// The floor: read every float of every row once — a vectorized sum in 64 KiB chunks, on the
// same threads as the rules — best of three, so ratios compare against the fastest read.
double readFloorSeconds(const RowSet& set) {
  constexpr long kChunk = 16384;
  double best = 1e300;
  for (int rep = 0; rep < 3; ++rep) {
    const auto start = Clock::now();
    const long total = long(set.storage.size());
    const float* data = set.storage.data();
    double sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
    for (long at = 0; at < total; at += kChunk) {
      const long n = std::min(kChunk, total - at);
      sum += double(Eigen::Map<const Eigen::ArrayXf>(data + at, n).sum());
    }
    benchmark::DoNotOptimize(sum);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

// Runs body() once per iteration, timing each by hand (Google Benchmark's manual time) and
// turning a failure into a skip; returns the mean seconds per iteration.
template <class Body>
double timeIterations(benchmark::State& state, Body body) {
  double total = 0;
  for (auto _ : state) {
    const auto start = Clock::now();
    auto ok = body();
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (!ok) state.SkipWithError(ok.error().c_str());
    state.SetIterationTime(s);
    total += s;
  }
  return total / double(std::max<benchmark::IterationCount>(state.iterations(), 1));
}

// The counters every suite reports against its read floor of `bytes`.
void floorCounters(benchmark::State& state, double floor, double per_iteration, double bytes) {
  state.counters["floor_seconds"] = floor;
  state.counters["ratio_to_floor"] = per_iteration / floor;
  state.counters["GB_per_s"] = bytes / per_iteration / 1e9;
}

// Registers a manually timed benchmark reported in milliseconds.
template <class... Args>
void registerTimed(const std::string& name, Args&&... args) {
  benchmark::RegisterBenchmark(name.c_str(), std::forward<Args>(args)...)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

void runRule(benchmark::State& state, robust::RuleId rule, std::size_t n, std::size_t d) {
  const RowSet& set = rowSet(n, d);
  const double floor = readFloorSeconds(set);
  auto agg = robust::makeAggregator({.rule = rule, .tau = rule == robust::RuleId::kCc ? 1.0 : 0.0});
  std::vector<float> z(d);
  const std::size_t b = n / 4;
  const double per_iteration = timeIterations(state, [&] {
    auto report = (*agg)->mix({set.rows, b, {}}, z);
    benchmark::DoNotOptimize(z.data());
    return report;
  });
  floorCounters(state, floor, per_iteration, double(n * d * sizeof(float)));
}

void runFloor(benchmark::State& state, std::size_t n, std::size_t d) {
  const RowSet& set = rowSet(n, d);
  for (auto _ : state) state.SetIterationTime(readFloorSeconds(set));
  state.counters["GB_per_s"] = benchmark::Counter(double(n * d * sizeof(float)),
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

// compress: every codec on one vector of d floats (n = 1 row of the same noise), encode and
// decode timed separately, each with its ratio to the read floor of that vector.
void runCodec(benchmark::State& state, compress::CompressorConfig config, std::size_t d,
              bool decode) {
  const RowSet& set = rowSet(1, d);
  const std::span<const float> x = set.rows[0];
  const double floor = readFloorSeconds(set);
  if (config.codec == compress::CodecId::kPowersgd)
    config.layers = {{d / 1000, 1000}};  // a 1000-wide matrix
  auto made = compress::makeCompressor(config);
  if (!made) {
    state.SkipWithError(made.error().c_str());
    return;
  }
  compress::Encoded e;
  if (auto ok = (*made)->encode(x, e); !ok) {
    state.SkipWithError(ok.error().c_str());
    return;
  }
  std::vector<float> y(d);
  const double per_iteration = timeIterations(state, [&]() -> std::expected<void, std::string> {
    auto ok = decode ? compress::decode(e.bytes, y) : (*made)->encode(x, e);
    benchmark::DoNotOptimize(e.bytes.data());
    benchmark::DoNotOptimize(y.data());
    return ok;
  });
  floorCounters(state, floor, per_iteration, double(d * sizeof(float)));
  state.counters["elements_per_s"] = double(d) / per_iteration;
  state.counters["bytes"] = double(e.bytes.size());
  state.counters["compression_ratio"] = double(d * sizeof(float)) / double(e.bytes.size());
}

// One round of a colluding coalition's crafting: an opt_* line search (ALGORITHMS.md §4) against
// a rule (NNA; cs_plus_pt, whose principal trim measures every pair of rows) over h honest rows
// with f Byzantine copies. `shared`: what phalanx's coalition runs, one search by its leader for
// all f (node/adversary/coalition.h); otherwise f searches, what every colluder searching on its
// own would cost. Each reports its ratio to the shared search at f = 1, timed alternately with it
// in the same run, so "independent of f" reads off one counter.
void runCraft(benchmark::State& state, robust::AttackId attack, robust::RuleId rule, std::size_t h,
              std::size_t d, std::size_t f, bool shared) {
  const RowSet& set = rowSet(h, d);
  const auto make = [&](std::size_t byzantine) {
    return robust::makeAttack({.attack = attack,
                               .n = h + byzantine,
                               .f = byzantine,
                               .target = {.rule = rule},
                               .target_b = byzantine});
  };
  auto one = make(1), made = make(f);
  if (!one || !made) {
    state.SkipWithError((one ? made : one).error().c_str());
    return;
  }
  std::vector<float> out(d);
  const robust::AttackInput in{.honest = set.rows};
  const std::size_t searches = shared ? 1 : f;
  double total = 0, baseline = 0;
  for (auto _ : state) {
    auto start = Clock::now();
    for (std::size_t k = 0; k < searches; ++k) {
      if (auto ok = (*made)->craft(in, out); !ok) state.SkipWithError(ok.error().c_str());
    }
    benchmark::DoNotOptimize(out.data());
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    state.SetIterationTime(s);
    total += s;
    // The f = 1 search right after, outside the reported time: the two share the machine's
    // state (clock, caches) iteration by iteration.
    start = Clock::now();
    if (auto ok = (*one)->craft(in, out); !ok) state.SkipWithError(ok.error().c_str());
    baseline += std::chrono::duration<double>(Clock::now() - start).count();
  }
  state.counters["searches_per_round"] = double(searches);
  state.counters["ratio_to_shared_f1"] = baseline > 0 ? total / baseline : 0;
}

// One vector's statement digest (BLAKE3, what every signed round message costs each receiver),
// or OpenSSL's SHA-256 of the same bytes (SHA-NI where the CPU has it): the collision-resistant
// hash a user would otherwise reach for. Each reports its ratio to the read floor of that vector.
void runDigest(benchmark::State& state, std::size_t d, bool sha256) {
  const RowSet& set = rowSet(1, d);
  const std::span<const float> v = set.rows[0];
  const double floor = readFloorSeconds(set);
  const double per = timeIterations(state, [&]() -> std::expected<void, std::string> {
    if (!sha256) {
      benchmark::DoNotOptimize(net::vectorDigest(v));
      return {};
    }
    net::Digest out{};
    unsigned int size = 0;
    if (EVP_Digest(v.data(), v.size_bytes(), out.data(), &size, EVP_sha256(), nullptr) != 1)
      return std::unexpected("EVP_Digest failed");
    benchmark::DoNotOptimize(out);
    return {};
  });
  floorCounters(state, floor, per, double(v.size_bytes()));
}

}  // namespace

void registerDigestBenchmarks(bool quick) {
  // The Fashion-MNIST MLP (79,510 parameters), 1M and the 25.6M-parameter model.
  const std::vector<std::size_t> dims =
      quick ? std::vector<std::size_t>{4096}
            : std::vector<std::size_t>{79'510, 1'000'000, 25'600'000};
  for (std::size_t d : dims) {
    registerTimed(fmt::format("digest/blake3/d:{}", d), runDigest, d, false);
    registerTimed(fmt::format("digest/sha256/d:{}", d), runDigest, d, true);
  }
}

void registerAggregateBenchmarks(bool quick) {
  const std::vector<std::size_t> dims =
      quick ? std::vector<std::size_t>{4096} : std::vector<std::size_t>{1'000'000, 25'600'000};
  const std::vector<std::size_t> ns =
      quick ? std::vector<std::size_t>{8} : std::vector<std::size_t>{8, 32};
  for (std::size_t d : dims) {
    for (std::size_t n : ns) {
      registerTimed(fmt::format("aggregate/floor/n:{}/d:{}", n, d), runFloor, n, d);
      for (const auto& rule : robust::kRules.entries) {
        registerTimed(fmt::format("aggregate/{}/n:{}/d:{}", rule.name, n, d), runRule, rule.value,
                      n, d);
      }
    }
  }
}

void registerCompressBenchmarks(bool quick) {
  const std::vector<std::size_t> dims = quick ? std::vector<std::size_t>{1'000'000 / 64}
                                              : std::vector<std::size_t>{1'000'000, 25'600'000};
  const auto add = [](const std::string& name, const compress::CompressorConfig& c, std::size_t d) {
    for (const bool decode : {false, true}) {
      registerTimed(fmt::format("compress/{}/{}/d:{}", name, decode ? "decode" : "encode", d),
                    runCodec, c, d, decode);
    }
  };
  for (std::size_t d : dims) {
    registerTimed(fmt::format("compress/floor/d:{}", d), runFloor, 1, d);
    for (const compress::CodecInfo& codec : compress::kCodecs) {
      if (!codec.configurable) continue;
      if (!codec.sparse) {
        add(std::string(codec.name), {.codec = codec.id}, d);
        continue;
      }
      for (const double density : {0.01, 0.001}) {
        // threshold: lambda set to give about that density on this data (uniform in ±0.5).
        const double lambda = 0.5 * (1.0 - density);
        add(fmt::format("{}:{}", codec.name, density),
            {.codec = codec.id,
             .density = density,
             .threshold = codec.id == compress::CodecId::kThreshold ? lambda : 0.0},
            d);
      }
    }
  }
}

void registerAttackBenchmarks(bool quick) {
  // The Fashion-MNIST MLP's 79,510 parameters and the breakdown grid's 16 honest peers.
  const std::size_t h = quick ? 8 : 16, d = quick ? 4096 : 79'510;
  for (const robust::RuleId rule : {robust::RuleId::kNna, robust::RuleId::kCsPlusPt}) {
    for (const robust::AttackId attack : {robust::AttackId::kOptAlie, robust::AttackId::kOptFoe}) {
      for (const std::size_t f : {std::size_t(1), std::size_t(8)}) {
        for (const bool shared : {true, false}) {
          if (f == 1 && !shared) continue;  // the same search
          registerTimed(
              fmt::format("attack/{}/{}/h:{}/d:{}/f:{}/{}", robust::kAttacks.name(attack),
                          robust::kRules.name(rule), h, d, f, shared ? "shared" : "every_colluder"),
              runCraft, attack, rule, h, d, f, shared);
        }
      }
    }
  }
}

}  // namespace phalanx::tools
