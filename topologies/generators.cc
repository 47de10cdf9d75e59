#include "topologies/generators.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>

#include "topologies/analysis.h"

namespace phalanx::topologies {
namespace {

using Edges = std::vector<Edge>;

Edge ordered(std::size_t a, std::size_t b) {
  return a < b ? Edge{NodeId(a), NodeId(b)} : Edge{NodeId(b), NodeId(a)};
}

Edges normalized(std::set<Edge> edges) { return Edges(edges.begin(), edges.end()); }

// A uniform draw in [0, bound) by rejection: unlike std::uniform_int_distribution, the same on
// every standard library.
std::uint64_t below(std::mt19937_64& rng, std::uint64_t bound) {
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  std::uint64_t x;
  do x = rng();
  while (x >= limit);
  return x % bound;
}

double unit(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }

void addClique(std::set<Edge>& edges, std::size_t first, std::size_t count) {
  for (std::size_t a = first; a < first + count; ++a) {
    for (std::size_t b = a + 1; b < first + count; ++b) edges.insert(ordered(a, b));
  }
}

Edges ring(std::size_t n) {
  std::set<Edge> e;
  for (std::size_t i = 0; n > 1 && i < n; ++i) e.insert(ordered(i, (i + 1) % n));
  return normalized(std::move(e));
}

std::expected<Edges, std::string> torus(std::size_t n, std::size_t rows) {
  if (rows == 0) {
    rows = std::size_t(std::sqrt(double(n)));
    while (rows > 1 && n % rows != 0) --rows;
  }
  if (rows == 0 || n % rows != 0) {
    return std::unexpected(fmt::format("torus: rows = {} does not divide n = {}", rows, n));
  }
  const std::size_t cols = n / rows;
  std::set<Edge> e;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t at = r * cols + c;
      if (cols > 1) e.insert(ordered(at, r * cols + (c + 1) % cols));
      if (rows > 1) e.insert(ordered(at, ((r + 1) % rows) * cols + c));
    }
  }
  return normalized(std::move(e));
}

Edges exponential(std::size_t n) {
  std::set<Edge> e;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t hop = 1; hop < n; hop *= 2) e.insert(ordered(i, (i + hop) % n));
  }
  return normalized(std::move(e));
}

// Random kinds: redraw until connected.
template <class Draw>
std::expected<Edges, std::string> connectedDraw(const std::string& kind, std::size_t n,
                                                std::uint64_t seed, Draw draw) {
  std::mt19937_64 rng(seed);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    auto edges = draw(rng);
    if (edges && componentCount(n, *edges) == 1) return *edges;
  }
  return std::unexpected(fmt::format(
      "{}: no connected graph in 1000 draws from seed {}; raise the density", kind, seed));
}

std::optional<Edges> erdosRenyi(std::size_t n, double p, std::mt19937_64& rng) {
  std::set<Edge> e;
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = a + 1; b < n; ++b) {
      if (unit(rng) < p) e.insert(ordered(a, b));
    }
  }
  return normalized(std::move(e));
}

// Pairing model: n * degree half-edges shuffled and paired; a draw with a self-loop or a
// repeated pair is rejected, which keeps the result uniform over simple regular graphs.
std::optional<Edges> regular(std::size_t n, std::size_t degree, std::mt19937_64& rng) {
  std::vector<std::size_t> stubs;
  for (std::size_t i = 0; i < n; ++i) stubs.insert(stubs.end(), degree, i);
  for (std::size_t i = stubs.size(); i > 1; --i) std::swap(stubs[i - 1], stubs[below(rng, i)]);
  std::set<Edge> e;
  for (std::size_t i = 0; i + 1 < stubs.size(); i += 2) {
    if (stubs[i] == stubs[i + 1] || !e.insert(ordered(stubs[i], stubs[i + 1])).second) {
      return std::nullopt;
    }
  }
  return normalized(std::move(e));
}

// Steger–Wormald pairing: two remaining half-edges at a time, re-picked when they would make a
// self-loop or a repeated pair; nullopt when stuck (the caller draws again). Close to uniform,
// and it finishes where rejection almost never does (the chance that a whole shuffle is simple
// falls like exp(-(degree² - 1)/4): about 1e-7 at degree 8).
std::optional<Edges> regularByPairing(std::size_t n, std::size_t degree, std::mt19937_64& rng) {
  std::vector<std::size_t> stubs;
  for (std::size_t i = 0; i < n; ++i) stubs.insert(stubs.end(), degree, i);
  std::set<Edge> e;
  while (!stubs.empty()) {
    bool paired = false;
    for (int tries = 0; tries < 100 && !paired; ++tries) {
      const std::size_t i = below(rng, stubs.size()), j = below(rng, stubs.size());
      if (i == j || stubs[i] == stubs[j] || e.contains(ordered(stubs[i], stubs[j]))) continue;
      e.insert(ordered(stubs[i], stubs[j]));
      for (const std::size_t k : {std::max(i, j), std::min(i, j)}) {
        stubs[k] = stubs.back();
        stubs.pop_back();
      }
      paired = true;
    }
    if (!paired) return std::nullopt;
  }
  return normalized(std::move(e));
}

}  // namespace

const std::vector<std::string>& generatorParamNames(GraphKind kind) {
  static const std::map<GraphKind, std::vector<std::string>> names{
      {GraphKind::kTorus, {"rows"}},
      {GraphKind::kErdosRenyi, {"p", "seed"}},
      {GraphKind::kRegular, {"degree", "seed"}},
      {GraphKind::kTwoCliques, {"bridges"}},
      {GraphKind::kDumbbell, {"path"}},
      {GraphKind::kTwoWorlds, {"links", "byzantine"}},
  };
  static const std::vector<std::string> none;
  const auto it = names.find(kind);
  return it == names.end() ? none : it->second;
}

std::string formatGeneratorParam(const GeneratorParams& p, const std::string& name) {
  if (name == "p") return fmt::format("{}", p.p);
  if (name == "degree") return fmt::format("{}", p.degree);
  if (name == "rows") return fmt::format("{}", p.rows);
  if (name == "bridges") return fmt::format("{}", p.bridges);
  if (name == "path") return fmt::format("{}", p.path);
  if (name == "links") return fmt::format("{}", p.links);
  if (name == "byzantine") return fmt::format("{}", p.byzantine);
  if (name == "seed") return fmt::format("{}", p.seed);
  return "";
}

std::expected<std::vector<Edge>, std::string> generateEdges(GraphKind kind, std::size_t n,
                                                            const GeneratorParams& params) {
  const std::string name(kGraphKinds.name(kind));
  if (n == 0) return std::unexpected(name + ": needs at least one node");
  if (kind == GraphKind::kRing) return ring(n);
  if (kind == GraphKind::kTorus) return torus(n, params.rows);
  if (kind == GraphKind::kComplete) {
    std::set<Edge> e;
    addClique(e, 0, n);
    return normalized(std::move(e));
  }
  if (kind == GraphKind::kExponential) return exponential(n);
  if (kind == GraphKind::kErdosRenyi) {
    if (!(params.p > 0 && params.p <= 1)) {
      return std::unexpected(fmt::format("erdos_renyi: p = {} must be in (0, 1]", params.p));
    }
    return connectedDraw(name, n, params.seed,
                         [&](std::mt19937_64& rng) { return erdosRenyi(n, params.p, rng); });
  }
  if (kind == GraphKind::kRegular) {
    if (params.degree >= n || (n * params.degree) % 2 != 0 || (n > 1 && params.degree == 0)) {
      return std::unexpected(
          fmt::format("regular: degree = {} must be in [1, n - 1] with n * degree even (n = {})",
                      params.degree, n));
    }
    // Exact rejection first (every graph it drew before stays the same); pairing where
    // rejection cannot finish.
    auto exact = connectedDraw(
        name, n, params.seed, [&](std::mt19937_64& rng) { return regular(n, params.degree, rng); });
    if (exact) return exact;
    return connectedDraw(name, n, params.seed, [&](std::mt19937_64& rng) {
      return regularByPairing(n, params.degree, rng);
    });
  }
  if (kind == GraphKind::kTwoCliques) {
    const std::size_t half = n / 2;
    if (n < 2 || n % 2 != 0) {
      return std::unexpected(fmt::format("two_cliques: n = {} must be even", n));
    }
    if (params.bridges < 1 || params.bridges > half) {
      return std::unexpected(
          fmt::format("two_cliques: bridges = {} must be in [1, n/2 = {}]", params.bridges, half));
    }
    std::set<Edge> e;
    addClique(e, 0, half);
    addClique(e, half, half);
    for (std::size_t i = 0; i < params.bridges; ++i) e.insert(ordered(i, half + i));
    return normalized(std::move(e));
  }
  if (kind == GraphKind::kDumbbell) {
    if (params.path >= n || (n - params.path) % 2 != 0 || n - params.path < 2) {
      return std::unexpected(
          fmt::format("dumbbell: n - path = {} - {} must be even and at least 2", n, params.path));
    }
    const std::size_t side = (n - params.path) / 2;
    std::set<Edge> e;
    addClique(e, 0, side);
    addClique(e, side + params.path, side);
    // Last node of the first clique, the path nodes in order, first node of the second.
    for (std::size_t at = side - 1; at < side + params.path; ++at) e.insert(ordered(at, at + 1));
    return normalized(std::move(e));
  }
  if (kind == GraphKind::kTwoWorlds) {
    if (params.byzantine + 2 > n) {
      return std::unexpected(
          fmt::format("two_worlds: n - byzantine = {} - {} must leave at least 2 honest nodes", n,
                      params.byzantine));
    }
    const std::size_t honest = n - params.byzantine, first = honest / 2, second = honest - first;
    if (params.links < 1 || params.links > second) {
      return std::unexpected(
          fmt::format("two_worlds: links = {} must be in [1, {}] (the second world's size)",
                      params.links, second));
    }
    std::set<Edge> e;
    addClique(e, 0, first);
    addClique(e, first, second);
    for (std::size_t i = 0; i < first; ++i) {
      for (std::size_t k = 0; k < params.links; ++k) e.insert(ordered(i, first + (i + k) % second));
    }
    for (std::size_t b = honest; b < n; ++b) {
      for (std::size_t i = 0; i < honest; ++i) e.insert(ordered(i, b));
    }
    return normalized(std::move(e));
  }
  if (kind == GraphKind::kStar) {
    if (n < 2) return std::unexpected(fmt::format("star: n = {} must be at least 2", n));
    std::vector<Edge> e;
    for (std::size_t leaf = 1; leaf < n; ++leaf) e.emplace_back(NodeId(0), NodeId(leaf));
    return e;
  }
  return std::unexpected(fmt::format("unknown topology kind {} (allowed: {})", int(kind),
                                     fmt::join(kGraphKinds.names(), ", ")));
}

std::vector<std::optional<std::size_t>> generatedBudgets(GraphKind kind, std::size_t n,
                                                         const GeneratorParams& params) {
  std::vector<std::optional<std::size_t>> budgets(n);
  if (kind == GraphKind::kTwoWorlds) {
    for (std::size_t b = n - std::min(n, params.byzantine); b < n; ++b) budgets[b] = 0;
  } else if (kind == GraphKind::kStar) {
    for (std::size_t leaf = 1; leaf < n; ++leaf) budgets[leaf] = 0;
  }
  return budgets;
}

}  // namespace phalanx::topologies
