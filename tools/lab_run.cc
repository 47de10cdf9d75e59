#include "tools/lab_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/text.h"
#include "compress/compressor.h"
#include "compress/decode.h"
#include "node/npy.h"
#include "robust/aggregator.h"
#include "robust/attacks.h"
#include "tools/command.h"

namespace phalanx::tools {
namespace {

// One object per line, keys in the order given; NaN and infinities print as null.
void printJson(const nlohmann::ordered_json& j) { fmt::print("{}\n", j.dump()); }

// Milliseconds to the microsecond: more digits would be noise.
double milliseconds(double ms) { return std::round(ms * 1000.0) / 1000.0; }

double millisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// "nnm,,clip" and "" name the same lists as "nnm,clip" and none.
std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out = base::split(text, ',');
  std::erase(out, std::string());
  return out;
}

// The 2-D array of vectors in `file`, or nothing after logging why.
std::optional<node::NpyArray> readRows(const std::string& file, const char* what) {
  try {
    node::NpyArray x = node::readNpy(file);
    if (x.shape.size() == 2 && x.rows() > 0) return x;
    spdlog::error("{}: expected a 2-D array whose rows are the {}", file, what);
  } catch (const node::NpyError& e) {
    spdlog::error("{}", e.what());
  }
  return std::nullopt;
}

// Writes one vector as a 1-D .npy file; the exit code.
int writeVector(const std::string& file, std::span<const float> v) {
  try {
    const std::size_t shape[] = {v.size()};
    node::writeNpy(file, shape, v);
    return kExitOk;
  } catch (const node::NpyError& e) {
    spdlog::error("{}", e.what());
    return kExitFailure;
  }
}

// --pre parsed, or nullopt after saying what is wrong with it.
std::optional<std::vector<robust::PreSpec>> preSpecsOf(const std::string& list) {
  auto specs = robust::parsePreSpecs(splitList(list));
  if (!specs) {
    spdlog::error("--pre: {}", specs.error());
    return std::nullopt;
  }
  return std::move(*specs);
}

}  // namespace

int runLabAggregate(const LabAggregateOptions& o) {
  const auto pre = preSpecsOf(o.pre);
  if (!pre) return kExitBadInput;
  const auto read = readRows(o.in, "vectors");
  if (!read) return kExitBadInput;
  const node::NpyArray& x = *read;
  if (o.pivot >= x.rows()) {
    spdlog::error("--pivot {}: {} has only {} rows", o.pivot, o.in, x.rows());
    return kExitBadInput;
  }
  auto agg = robust::makeAggregator({.rule = robust::kRules.parse(o.rule).value(),
                                     .pre = *pre,
                                     .tau = o.tau,
                                     .iters = o.iters,
                                     .seed = o.seed});
  if (!agg) {
    spdlog::error("{}", agg.error());
    return kExitBadInput;
  }
  // The pivot goes first; `order[k]` is the file row of mix row k.
  std::vector<std::size_t> order(x.rows());
  std::iota(order.begin(), order.end(), 0);
  std::rotate(order.begin(), order.begin() + std::ptrdiff_t(o.pivot),
              order.begin() + std::ptrdiff_t(o.pivot) + 1);
  std::vector<std::span<const float>> rows;
  for (std::size_t r : order) rows.push_back(x.row(r));
  std::vector<float> z(x.cols());
  const auto start = std::chrono::steady_clock::now();
  auto report = (*agg)->mix({rows, o.b, {}}, z);
  const double ms = millisecondsSince(start);
  if (!report) {
    spdlog::error("{}", report.error());
    return kExitBadInput;
  }
  if (const int rc = writeVector(o.out, z); rc != kExitOk) return rc;
  if (o.json) {
    std::vector<int> kept(x.rows()), nonfinite(x.rows());
    std::vector<double> distance(x.rows());
    for (std::size_t k = 0; k < order.size(); ++k) {
      kept[order[k]] = report->kept[k];
      nonfinite[order[k]] = report->nonfinite[k];
      distance[order[k]] = report->distance[k];
    }
    printJson({{"rule", (*agg)->name()},
               {"rows", x.rows()},
               {"dim", x.cols()},
               {"b", o.b},
               {"pivot", o.pivot},
               {"kept", kept},
               {"nonfinite", nonfinite},
               {"distance", distance},
               {"ms", milliseconds(ms)}});
  }
  return kExitOk;
}

int runLabAttack(const LabAttackOptions& o) {
  const auto pre = preSpecsOf(o.pre);
  if (!pre) return kExitBadInput;
  const auto read = readRows(o.in, "honest vectors");
  if (!read) return kExitBadInput;
  const node::NpyArray& h = *read;
  robust::AttackConfig c{.attack = robust::kAttacks.parse(o.name).value(),
                         .tau = o.tau,
                         .alie_z = o.alie_z,
                         .n = h.rows() + o.f,
                         .f = o.f,
                         .sigma = o.sigma,
                         .scale_to_mean = o.scale_to_mean,
                         .mimic = o.mimic,
                         .eps = o.eps,
                         .seed = o.seed};
  c.target = {.rule = robust::kRules.parse(o.agg).value(), .pre = *pre, .seed = o.seed};
  c.target_b = o.b.value_or(o.f);
  auto attack = robust::makeAttack(c);
  if (!attack) {
    spdlog::error("{}", attack.error());
    return kExitBadInput;
  }
  std::vector<std::span<const float>> honest;
  for (std::size_t r = 0; r < h.rows(); ++r) honest.push_back(h.row(r));
  // Per-target attacks see a complete graph: W = 1/n for everyone, f Byzantine neighbours.
  std::optional<robust::TargetView> view;
  std::vector<std::span<const float>> neighbours;
  std::vector<double> weights;
  if ((*attack)->perTarget()) {
    if (!o.target || *o.target >= h.rows()) {
      spdlog::error("{}: needs --target I, the honest row under attack (0..{})", o.name,
                    h.rows() - 1);
      return kExitBadInput;
    }
    const double w = 1.0 / double(h.rows() + o.f);
    for (std::size_t r = 0; r < h.rows(); ++r) {
      if (r != *o.target) neighbours.push_back(h.row(r));
    }
    weights.assign(neighbours.size(), w);
    view = robust::TargetView{.target = h.row(*o.target),
                              .honest_neighbours = neighbours,
                              .honest_weights = weights,
                              .byzantine_weight = w * double(o.f),
                              .byzantine_count = std::max<std::size_t>(o.f, 1),
                              .budget = c.target_b};
  }
  if (c.attack == robust::AttackId::kSpectral) {
    if (o.fiedler.size() != h.rows()) {
      spdlog::error("spectral: needs --fiedler with one entry per honest row ({}), got {}",
                    h.rows(), o.fiedler.size());
      return kExitBadInput;
    }
    view->fiedler = o.fiedler[*o.target];
  }
  std::vector<float> a(h.cols());
  const auto start = std::chrono::steady_clock::now();
  auto ok = (*attack)->craft({honest, view ? &*view : nullptr, o.fiedler}, a);
  const double ms = millisecondsSince(start);
  if (!ok) {
    spdlog::error("{}", ok.error());
    return kExitBadInput;
  }
  if (const int rc = writeVector(o.out, a); rc != kExitOk) return rc;
  if (o.json) {
    double norm = 0;
    for (float v : a) norm += double(v) * v;
    printJson({{"attack", o.name},
               {"honest", h.rows()},
               {"dim", h.cols()},
               {"f", o.f},
               {"norm", std::sqrt(norm)},
               {"ms", milliseconds(ms)}});
  }
  return kExitOk;
}

int runLabCompress(const LabCompressOptions& o) {
  node::NpyArray x;
  if (!o.in.empty()) {
    try {
      x = node::readNpy(o.in);
    } catch (const node::NpyError& e) {
      spdlog::error("{}", e.what());
      return kExitBadInput;
    }
  } else if (o.dim > 0) {
    x.shape = {o.dim};
    x.data.resize(o.dim);
    std::mt19937_64 rng(o.seed);
    std::normal_distribution<float> gauss;
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (float& v : x.data) v = o.dist == "gauss" ? gauss(rng) : uniform(rng);
  } else {
    spdlog::error("give the vector: --in x.npy or --dim D");
    return kExitBadInput;
  }
  compress::CompressorConfig config{.codec = compress::codecNamed(o.codec)->id,
                                    .density = o.density,
                                    .values = o.values,
                                    .bits = o.bits,
                                    .bucket = o.bucket,
                                    .rank = o.rank,
                                    .threshold = o.threshold,
                                    .unbiased = !o.biased,
                                    .seed = o.seed};
  // A 2-D input is one matrix-shaped layer (what powersgd factors); 1-D is one vector.
  if (x.shape.size() == 2) config.layers = {{x.rows(), x.cols()}};
  auto codec = compress::makeCompressor(config);
  if (!codec) {
    spdlog::error("{}", codec.error());
    return kExitBadInput;
  }
  compress::Encoded e;
  const auto t0 = std::chrono::steady_clock::now();
  if (auto ok = (*codec)->encode(x.data, e); !ok) {
    spdlog::error("{}: {}", o.in.empty() ? "input" : o.in, ok.error());
    return kExitBadInput;
  }
  const auto t1 = std::chrono::steady_clock::now();
  std::vector<float> y(x.data.size());
  if (auto ok = compress::decode(e.bytes, y); !ok) {
    spdlog::error("own message did not decode: {}", ok.error());
    return kExitFailure;
  }
  const auto t2 = std::chrono::steady_clock::now();
  double err = 0, norm = 0;
  for (std::size_t j = 0; j < y.size(); ++j) {
    err += (double(y[j]) - x.data[j]) * (double(y[j]) - x.data[j]);
    norm += double(x.data[j]) * x.data[j];
  }
  const double rel_error = norm > 0 ? std::sqrt(err / norm) : std::sqrt(err);
  if (!o.out.empty()) {
    try {
      node::writeNpy(o.out, x.shape, y);
    } catch (const node::NpyError& ex) {
      spdlog::error("{}", ex.what());
      return kExitFailure;
    }
  }
  const double dense_bytes = double(y.size() * sizeof(float));
  const double ratio = dense_bytes / double(e.bytes.size());
  const double encode_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  const double decode_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  if (o.json) {
    printJson({{"codec", o.codec},
               {"dim", y.size()},
               {"bytes", e.bytes.size()},
               {"dense_bytes", std::size_t(dense_bytes)},
               {"ratio", ratio},
               {"encode_ms", milliseconds(encode_ms)},
               {"decode_ms", milliseconds(decode_ms)},
               {"rel_error", rel_error}});
  } else {
    fmt::print(
        "{}: {} entries -> {} bytes (ratio {:.1f}x), encode {:.3f} ms, decode {:.3f} ms, "
        "relative error {:.4g}\n",
        o.codec, y.size(), e.bytes.size(), ratio, encode_ms, decode_ms, rel_error);
  }
  return kExitOk;
}

}  // namespace phalanx::tools
