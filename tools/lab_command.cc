// `phalanx lab aggregate|attack|compress`: one robust rule, attack or codec on .npy vectors, for
// researchers and for cross-checking against other libraries (ByzFL, MoNNA's code).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/text.h"
#include "compress/compressor.h"
#include "compress/decode.h"
#include "node/json.h"
#include "node/npy.h"
#include "robust/aggregator.h"
#include "robust/attacks.h"
#include "tools/command.h"

namespace phalanx::tools {
namespace {

using node::jsonNumber;

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

struct AggregateOptions {
  std::string rule = "nna";
  std::size_t b = 0;
  std::size_t pivot = 0;
  std::string pre;
  double tau = 0;
  int iters = 1;
  std::uint64_t seed = 1;
  std::string in, out;
  bool json = false;
};

// --pre parsed, or nullopt after saying what is wrong with it.
std::optional<std::vector<robust::PreSpec>> preSpecsOf(const std::string& list) {
  auto specs = robust::parsePreSpecs(splitList(list));
  if (!specs) {
    spdlog::error("--pre: {}", specs.error());
    return std::nullopt;
  }
  return std::move(*specs);
}

int runAggregate(const AggregateOptions& o) {
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
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!report) {
    spdlog::error("{}", report.error());
    return kExitBadInput;
  }
  if (const int rc = writeVector(o.out, z); rc != kExitOk) return rc;
  if (o.json) {
    std::vector<int> kept(x.rows()), nonfinite(x.rows());
    std::vector<std::string> distance(x.rows());
    for (std::size_t k = 0; k < order.size(); ++k) {
      kept[order[k]] = report->kept[k];
      nonfinite[order[k]] = report->nonfinite[k];
      distance[order[k]] = jsonNumber(report->distance[k]);
    }
    fmt::print(
        "{{\"rule\": \"{}\", \"rows\": {}, \"dim\": {}, \"b\": {}, \"pivot\": {}, "
        "\"kept\": [{}], \"nonfinite\": [{}], \"distance\": [{}], \"ms\": {:.3f}}}\n",
        (*agg)->name(), x.rows(), x.cols(), o.b, o.pivot, fmt::join(kept, ", "),
        fmt::join(nonfinite, ", "), fmt::join(distance, ", "), ms);
  }
  return kExitOk;
}

struct AttackOptions {
  std::string name;
  std::optional<double> tau;
  bool alie_z = false;
  std::size_t f = 1;
  double sigma = 1.0;
  bool scale_to_mean = false;
  std::size_t mimic = 0;
  double eps = 1.5;
  std::optional<std::size_t> target;
  std::vector<double> fiedler;  // spectral: v_k per honest row
  std::string agg = "nna";
  std::optional<std::size_t> b;
  std::string pre;
  std::uint64_t seed = 1;
  std::string in, out;
  bool json = false;
};

int runAttack(const AttackOptions& o) {
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
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!ok) {
    spdlog::error("{}", ok.error());
    return kExitBadInput;
  }
  if (const int rc = writeVector(o.out, a); rc != kExitOk) return rc;
  if (o.json) {
    double norm = 0;
    for (float v : a) norm += double(v) * v;
    fmt::print(
        "{{\"attack\": \"{}\", \"honest\": {}, \"dim\": {}, \"f\": {}, \"norm\": {}, "
        "\"ms\": {:.3f}}}\n",
        o.name, h.rows(), h.cols(), o.f, jsonNumber(std::sqrt(norm)), ms);
  }
  return kExitOk;
}

struct CompressOptions {
  std::string codec = "topk";
  double density = 0.01;
  compress::ValueType values = compress::ValueType::kFp32;
  int bits = 8;
  int rank = 2;
  std::size_t bucket = 0;
  double threshold = 0;
  bool biased = false;
  std::uint64_t seed = 1;
  std::string in;
  std::size_t dim = 0;
  std::string dist = "gauss";
  std::string out;
  bool json = false;
};

int runCompress(const CompressOptions& o) {
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
    fmt::print(
        "{{\"codec\": \"{}\", \"dim\": {}, \"bytes\": {}, \"dense_bytes\": {}, "
        "\"ratio\": {}, \"encode_ms\": {:.3f}, \"decode_ms\": {:.3f}, \"rel_error\": {}}}\n",
        o.codec, y.size(), e.bytes.size(), std::size_t(dense_bytes), jsonNumber(ratio), encode_ms,
        decode_ms, jsonNumber(rel_error));
  } else {
    fmt::print(
        "{}: {} entries -> {} bytes (ratio {:.1f}x), encode {:.3f} ms, decode {:.3f} ms, "
        "relative error {:.4g}\n",
        o.codec, y.size(), e.bytes.size(), ratio, encode_ms, decode_ms, rel_error);
  }
  return kExitOk;
}

}  // namespace

Command addLabCommand(CLI::App& root) {
  CLI::App* lab = root.add_subcommand("lab",
                                      "Run one aggregator, attack or compressor on vectors from "
                                      ".npy files (float32, rows = vectors)");
  lab->require_subcommand(1);

  auto agg = std::make_shared<AggregateOptions>();
  CLI::App* a = lab->add_subcommand("aggregate", "Mix the rows of X.npy with one robust rule");
  a->add_option("--rule", agg->rule,
                "rule: " + fmt::format("{}", fmt::join(robust::kRules.names(), ", ")))
      ->check(CLI::IsMember(robust::kRules.names()));
  a->add_option("--b", agg->b, "Byzantine budget b");
  a->add_option("--pivot", agg->pivot, "row that is the node's own vector (default 0)");
  a->add_option("--pre", agg->pre, "pre-aggregators in order, e.g. nnm,clip:2.0,arc,bucketing:2");
  a->add_option("--tau", agg->tau, "clipping radius (cc; clipped_gossip, 0 = adaptive)");
  a->add_option("--iters", agg->iters, "cc iterations")->check(CLI::PositiveNumber);
  a->add_option("--seed", agg->seed, "seed for bucketing");
  a->add_option("--in", agg->in, "X.npy, one vector per row")->required()->check(CLI::ExistingFile);
  a->add_option("--out", agg->out, "z.npy, the mix")->required();
  a->add_flag("--json", agg->json, "print one JSON line with the report");

  auto att = std::make_shared<AttackOptions>();
  CLI::App* t =
      lab->add_subcommand("attack", "Craft a Byzantine vector from the honest rows of H.npy");
  t->add_option("--name", att->name,
                "attack: " + fmt::format("{}", fmt::join(robust::kAttacks.names(), ", ")))
      ->required()
      ->check(CLI::IsMember(robust::kAttacks.names()));
  t->add_option("--tau", att->tau,
                "attack strength (ipm default 2.0, foe 0.1, alie 1.5; spectral: no search)");
  t->add_flag("--z", att->alie_z, "alie: tau = z from n = rows + f and f");
  t->add_option("--f", att->f, "number of Byzantine copies (opt_* searches, alie --z)");
  t->add_option("--agg", att->agg, "opt_*, spectral: the rule attacked")
      ->check(CLI::IsMember(robust::kRules.names()));
  t->add_option("--b", att->b, "opt_*: that rule's budget (default f)");
  t->add_option("--pre", att->pre, "opt_*: that rule's pre-aggregators");
  t->add_option("--sigma", att->sigma, "gaussian: standard deviation");
  t->add_flag("--scale-to-mean", att->scale_to_mean, "gaussian: sigma = |mean| / sqrt(d)");
  t->add_option("--mimic", att->mimic, "mimic: which honest row to copy");
  t->add_option("--eps", att->eps, "dissensus: eps");
  t->add_option("--target", att->target, "dissensus, spectral: the honest row under attack");
  t->add_option("--fiedler", att->fiedler,
                "spectral: the honest graph's Fiedler vector, one entry per row (v0,v1,...)")
      ->delimiter(',');
  t->add_option("--seed", att->seed, "seed (gaussian)");
  t->add_option("--in", att->in, "H.npy, one honest vector per row")
      ->required()
      ->check(CLI::ExistingFile);
  t->add_option("--out", att->out, "a.npy, the attack vector")->required();
  t->add_flag("--json", att->json, "print one JSON line");

  auto comp = std::make_shared<CompressOptions>();
  CLI::App* c = lab->add_subcommand("compress", "Encode and decode one vector with one compressor");
  c->add_option("--codec", comp->codec,
                fmt::format("codec: {}", fmt::join(compress::kCodecNames, ", ")))
      ->required()
      ->check(CLI::IsMember(compress::kCodecNames));
  c->add_option("--density", comp->density, "topk, topk_sampled, randk: fraction kept");
  addChoiceOption(c, "--values", comp->values, compress::kValueTypes, "sparse values");
  c->add_option("--bits", comp->bits, "qsgd: bits per entry with the sign (2..16)");
  c->add_option("--rank", comp->rank, "powersgd: rank (the input must be 2-D)");
  c->add_option("--bucket", comp->bucket,
                "qsgd, sign: bucket size (0: 128 for qsgd, 1024 for sign)");
  c->add_option("--threshold", comp->threshold, "threshold: lambda (0: 1/(2 sqrt(k)))");
  c->add_flag("--biased", comp->biased, "randk without the d/k scale; qsgd with its shrink");
  c->add_option("--seed", comp->seed, "the codec's seed (and --dim's data)");
  c->add_option("--in", comp->in, "x.npy: a vector, or a matrix (one layer)")
      ->check(CLI::ExistingFile);
  c->add_option("--dim", comp->dim, "instead of --in: a random vector of this length");
  c->add_option("--dist", comp->dist, "--dim's distribution: gauss, uniform")
      ->check(CLI::IsMember({"gauss", "uniform"}));
  c->add_option("--out", comp->out, "y.npy: the decoded vector");
  c->add_flag("--json", comp->json, "print one JSON line");

  return {lab, [a, t, c, agg, att, comp] {
            if (a->parsed()) return runAggregate(*agg);
            if (t->parsed()) return runAttack(*att);
            if (c->parsed()) return runCompress(*comp);
            return kExitBadInput;
          }};
}

}  // namespace phalanx::tools
