#include "tools/experiment.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <set>

#include "base/text.h"
#include "topologies/generators.h"
#include "topologies/placement.h"

namespace phalanx::tools {
namespace {

// A scalar as written; a mapping as "k=v;k2=v2" (a bundle of fields set together).
std::string scalarText(const YAML::Node& n) {
  if (!n.IsMap()) return n.as<std::string>();
  std::string out;
  for (const auto& kv : n)
    out +=
        (out.empty() ? "" : ";") + kv.first.as<std::string>() + "=" + kv.second.as<std::string>();
  return out;
}

// "nnm,clip:2+cwtm:0.5" -> pre [nnm, clip:2], rule cwtm, tau 0.5
std::vector<std::string> ruleSets(const std::string& spec) {
  std::vector<std::string> parts = base::split(spec, '+');
  std::string rule = parts.back();
  parts.pop_back();
  std::vector<std::string> sets;
  std::string pre;
  for (const auto& p : parts) {
    for (const auto& item : base::split(p, ',')) {
      pre += (pre.empty() ? "" : ", ") + fmt::format("\"{}\"", item);
    }
  }
  sets.push_back("mixing.pre=[" + pre + "]");
  // The rule value decides tau whole: "clipped_gossip" means adaptive (tau 0) even when the
  // base config names a fixed radius, which would otherwise leak into that cell.
  if (const auto colon = rule.find(':'); colon != std::string::npos) {
    sets.push_back("mixing.tau=" + rule.substr(colon + 1));
    rule = rule.substr(0, colon);
  } else {
    sets.push_back("mixing.tau=0");
  }
  sets.push_back("mixing.rule=" + rule);
  return sets;
}

}  // namespace

std::string Cell::value(const std::string& axis, const std::string& fallback) const {
  for (const auto& [name, v] : values) {
    if (name == axis) return v;
  }
  return fallback;
}

std::string Cell::name() const {
  std::string out;
  for (const auto& [axis, v] : values) {
    std::string part = axis + "-" + v;
    for (char& ch : part) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '.' && ch != '+' &&
          ch != '_')
        ch = '_';
    }
    out += (out.empty() ? "" : "_") + part;
  }
  // A folder name must fit the file system's 255 bytes: a long one keeps its readable start and
  // ends in a hash of the whole, so cells stay apart.
  constexpr std::size_t kLongest = 240;
  if (out.size() > kLongest) {
    std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64: stable on every machine
    for (const unsigned char ch : out) h = (h ^ ch) * 0x100000001b3ULL;
    out = fmt::format("{}-{:016x}", out.substr(0, kLongest - 17), h);
  }
  return out.empty() ? "single" : out;
}

Grid loadGrid(const std::filesystem::path& file) {
  Grid g;
  g.file = file;
  const auto fail = [&](const std::string& field, const std::string& problem) -> GridError {
    return GridError(fmt::format("{}: {}: {}", file.string(), field, problem));
  };
  YAML::Node root;
  try {
    root = YAML::LoadFile(file.string());
  } catch (const YAML::Exception& e) {
    throw GridError(fmt::format("{}: {}", file.string(), e.what()));
  }
  if (!root.IsMap()) throw fail("(top)", "expected a mapping");
  const auto base = file.parent_path();
  static const std::set<std::string> known{"config",  "topology", "byzantine", "f",   "honest",
                                           "collude", "rounds",   "set",       "grid"};
  for (const auto& kv : root) {
    if (!known.contains(kv.first.as<std::string>())) {
      throw fail(kv.first.as<std::string>(),
                 "unknown field (allowed: config, topology, byzantine, f, honest, collude, rounds, "
                 "set, grid)");
    }
  }
  try {
    if (!root["config"]) throw fail("config", "required");
    g.config = base / root["config"].as<std::string>();
    if (!root["topology"]) throw fail("topology", "required");
    const YAML::Node t = root["topology"];
    if (t.IsScalar()) {
      g.topology.file = base / t.as<std::string>();
    } else if (t.IsMap()) {
      for (const auto& kv : t) {
        const std::string key = kv.first.as<std::string>();
        if (key == "kind") {
          g.topology.kind = topologies::kGraphKinds.parse(kv.second.as<std::string>());
          if (!g.topology.kind)
            throw fail("topology.kind",
                       fmt::format("unknown value '{}' (allowed: {})", kv.second.as<std::string>(),
                                   fmt::join(topologies::kGraphKinds.names(), ", ")));
        } else if (key == "n")
          g.topology.n = kv.second.as<std::size_t>();
        else if (key == "byzantine_budget" && kv.second.as<std::string>() == "f")
          g.topology.budget_is_f = true;
        else if (key == "byzantine_budget")
          g.topology.byzantine_budget = kv.second.as<std::size_t>();
        else
          g.topology.params[key] = scalarText(kv.second);
      }
      if (root["honest"]) g.honest = root["honest"].as<std::size_t>();
      if (!g.topology.kind || (g.topology.n == 0 && g.honest == 0)) {
        throw fail("topology",
                   "a file, or {kind, n, byzantine_budget} (n may come from honest + f)");
      }
    } else {
      throw fail("topology", "a file, or {kind, n, byzantine_budget}");
    }
    if (root["byzantine"]) g.byzantine = root["byzantine"].as<std::vector<std::uint32_t>>();
    if (root["f"]) g.f = root["f"].as<std::size_t>();
    if (root["collude"]) g.collude = root["collude"].as<bool>();
    if (root["rounds"]) g.rounds = root["rounds"].as<std::uint64_t>();
    if (root["set"]) g.sets = root["set"].as<std::vector<std::string>>();
    if (!root["grid"] || !root["grid"].IsMap())
      throw fail("grid", "required: a mapping of axis: [values]");
    for (const auto& kv : root["grid"]) {
      Axis a{.name = kv.first.as<std::string>()};
      if (!kv.second.IsSequence() || kv.second.size() == 0)
        throw fail("grid." + a.name, "a non-empty list");
      for (const auto& v : kv.second) a.values.push_back(scalarText(v));
      g.axes.push_back(std::move(a));
    }
  } catch (const YAML::Exception& e) {
    throw GridError(fmt::format("{}: {}", file.string(), e.what()));
  }
  return g;
}

std::vector<Cell> expand(const Grid& grid, const std::vector<std::string>& filters) {
  std::map<std::string, std::set<std::string>> keep;
  for (const auto& f : filters) {
    const auto eq = f.find('=');
    if (eq == std::string::npos || eq == 0)
      throw GridError(fmt::format("--filter {}: expected field=v1,v2", f));
    const std::string field = f.substr(0, eq);
    if (std::none_of(grid.axes.begin(), grid.axes.end(),
                     [&](const Axis& a) { return a.name == field; })) {
      throw GridError(fmt::format("--filter {}: the grid has no axis '{}'", f, field));
    }
    for (auto& value : base::split(std::string_view(f).substr(eq + 1), ',')) {
      keep[field].insert(std::move(value));
    }
  }
  std::vector<Cell> cells{Cell{}};
  for (const Axis& a : grid.axes) {
    std::vector<Cell> next;
    for (const Cell& c : cells) {
      for (const auto& v : a.values) {
        if (keep.contains(a.name) && !keep[a.name].contains(v)) continue;
        Cell d = c;
        d.values.emplace_back(a.name, v);
        next.push_back(std::move(d));
      }
    }
    cells = std::move(next);
  }
  return cells;
}

namespace {

// The ids a placement axis value ("centrality", "cut", "random" or "random:SEED"; random's seed
// is otherwise the cell's seed axis, else 1) gives f Byzantine peers on the cell's topology.
std::vector<std::uint32_t> placedByzantine(const Grid& grid, const Cell& cell,
                                           const topologies::Topology& topology, std::size_t f,
                                           const std::string& value) {
  const auto colon = value.find(':');
  const std::string name = value.substr(0, colon);
  const auto strategy = topologies::kPlacementStrategies.parse(name);
  if (!strategy) {
    throw GridError(fmt::format("{}: placement: unknown value '{}' (allowed: last, {})",
                                grid.file.string(), value,
                                fmt::join(topologies::kPlacementStrategies.names(), ", ")));
  }
  std::uint64_t seed = 1;
  try {
    if (colon != std::string::npos)
      seed = std::stoull(value.substr(colon + 1));
    else if (!cell.value("seed").empty())
      seed = std::stoull(cell.value("seed"));
  } catch (const std::exception&) {
    throw GridError(
        fmt::format("{}: placement: '{}': a seed is a whole number", grid.file.string(), value));
  }
  const topologies::Placement placed = topologies::placeByzantine(topology, f, *strategy, seed);
  if (!placed.complete()) {
    throw GridError(fmt::format(
        "{}: placement {}: only {} of f = {} Byzantine peers fit the honest nodes' budgets",
        grid.file.string(), value, placed.byzantine.size(), f));
  }
  return placed.byzantine;
}

}  // namespace

CellPlan planCell(const Grid& grid, const Cell& cell, std::uint16_t base_port) {
  std::vector<topologies::NodeSpec> nodes;
  std::vector<topologies::Edge> edges;
  std::size_t budget = 0;
  if (!grid.topology.file.empty()) {
    if (!cell.value("n").empty())
      throw GridError(fmt::format("{}: an n axis sizes generated graphs, not a topology file",
                                  grid.file.string()));
    const auto t = topologies::loadTopology(grid.topology.file.string());
    nodes = t.nodes();
    edges = t.edges();
    budget = t.defaultBudget();
  } else {
    const TopologySpec& s = grid.topology;
    topologies::GeneratorParams p;
    for (const auto& [key, value] : s.params) {
      if (key == "p")
        p.p = std::stod(value);
      else if (key == "degree")
        p.degree = std::stoul(value);
      else if (key == "rows")
        p.rows = std::stoul(value);
      else if (key == "bridges")
        p.bridges = std::stoul(value);
      else if (key == "path")
        p.path = std::stoul(value);
      else if (key == "links")
        p.links = std::stoul(value);
      else if (key == "seed")
        p.seed = std::stoull(value);
      else
        throw GridError(
            fmt::format("{}: topology.{}: not a generator parameter", grid.file.string(), key));
    }
    // `honest: H` makes the graph H + f peers (a breakdown adds attackers to a fixed honest set).
    const std::string f_axis = cell.value("f");
    const std::size_t f = f_axis.empty() ? grid.f : std::stoul(f_axis);
    // An n axis sizes the generated graph per cell (a star of 8, 16, 32 leaves).
    const std::string n_axis = cell.value("n");
    const std::size_t n = !n_axis.empty()   ? std::stoul(n_axis)
                          : grid.honest > 0 ? grid.honest + f
                                            : s.n;
    // The attackers are the last f peers, joined to every honest one — unless a placement axis
    // chooses them among the two worlds' own nodes.
    if (s.kind == topologies::GraphKind::kTwoWorlds && cell.value("placement", "last") == "last")
      p.byzantine = f;
    auto made = topologies::generateEdges(*s.kind, n, p);
    if (!made) throw GridError(fmt::format("{}: topology: {}", grid.file.string(), made.error()));
    edges = std::move(*made);
    const auto budgets = topologies::generatedBudgets(*s.kind, n, p);
    for (std::uint32_t i = 0; i < n; ++i)
      nodes.push_back({.id = i, .byzantine_budget = budgets[i]});
    budget = s.budget_is_f ? f : s.byzantine_budget;
  }
  const std::size_t n = nodes.size();
  if (n > 250)
    throw GridError(fmt::format("{}: {} peers; a cell holds at most 250", grid.file.string(), n));
  for (std::size_t i = 0; i < n; ++i) {
    nodes[i].host = "127.0.0.1";
    nodes[i].port = std::uint16_t(base_port + i);
    // Metrics ports in their own range: a port is a transport port in every cell or in none.
    nodes[i].metrics_port = std::uint16_t(base_port + 250 + i);
  }
  CellPlan plan{.topology = topologies::Topology(nodes, edges, budget)};
  // Byzantine peers: explicit ids, or f of them (an f axis overrides both) — the last f, or
  // where a placement axis puts them.
  const std::string f_axis = cell.value("f");
  const std::string placement = cell.value("placement", "last");
  if (!f_axis.empty() || grid.byzantine.empty()) {
    const std::size_t f = f_axis.empty() ? grid.f : std::stoul(f_axis);
    if (f > n) throw GridError(fmt::format("{}: f = {} with {} peers", grid.file.string(), f, n));
    if (placement == "last") {
      for (std::size_t i = n - f; i < n; ++i) plan.byzantine.push_back(nodes[i].id);
    } else {
      plan.byzantine = placedByzantine(grid, cell, plan.topology, f, placement);
    }
  } else if (placement != "last") {
    throw GridError(
        fmt::format("{}: a placement axis chooses the Byzantine ids: give f, not "
                    "byzantine",
                    grid.file.string()));
  } else {
    plan.byzantine = grid.byzantine;
  }
  // attack: name[:key=value,...] — the parameters go to every Byzantine peer's config entry.
  const std::string attack = cell.value("attack", "none");
  const auto colon = attack.find(':');
  plan.attack = attack.substr(0, colon);
  plan.sets = grid.sets;
  for (const std::uint32_t id : plan.byzantine) {
    if (grid.collude) plan.sets.push_back(fmt::format("byzantine.{}.collude=true", id));
    if (colon == std::string::npos) continue;
    for (const auto& field : base::split(std::string_view(attack).substr(colon + 1), ',')) {
      plan.sets.push_back(fmt::format("byzantine.{}.{}", id, field));
    }
  }
  for (const auto& [axis, value] : cell.values) {
    if (axis == "attack" || axis == "f" || axis == "n" || axis == "placement") continue;
    if (axis == "rule") {
      for (auto& s : ruleSets(value)) plan.sets.push_back(std::move(s));
    } else if (value.find('=') != std::string::npos) {
      // A bundle: fields set together, under the axis's section ("settings": top level).
      for (const auto& field : base::split(value, ';')) {
        plan.sets.push_back((axis == "settings" ? "" : axis + ".") + field);
      }
    } else {
      plan.sets.push_back(axis + "=" + value);
    }
  }
  return plan;
}

std::vector<std::size_t> firstOfSameRun(const std::vector<CellPlan>& plans) {
  std::map<std::string, std::size_t> first;
  std::vector<std::size_t> out;
  out.reserve(plans.size());
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const CellPlan& p = plans[i];
    // The attack only matters when someone runs it.
    const std::string key = fmt::format(
        "{}\x1f{}\x1f{}\x1f{}", topologies::toYaml(p.topology, ""), fmt::join(p.byzantine, ","),
        p.byzantine.empty() ? "" : p.attack, fmt::join(p.sets, "\x1f"));
    out.push_back(first.emplace(key, i).first->second);
  }
  return out;
}

}  // namespace phalanx::tools
