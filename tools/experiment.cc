#include "tools/experiment.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/text.h"
#include "tools/launch.h"
#include "tools/report.h"
#include "tools/run_analysis.h"
#include "topologies/generators.h"

namespace phalanx::tools {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const std::vector<std::string> kPalette{"#08519c", "#a63603", "#006d2c", "#54278f",
                                        "#b30000", "#636363", "#e6550d", "#3182bd",
                                        "#31a354", "#756bb1", "#de2d26", "#969696"};

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
  std::vector<std::string> parts;
  std::size_t at = 0;
  while (true) {
    const std::size_t plus = spec.find('+', at);
    parts.push_back(spec.substr(at, plus == std::string::npos ? std::string::npos : plus - at));
    if (plus == std::string::npos) break;
    at = plus + 1;
  }
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

double mean(const std::vector<double>& v) {
  double sum = 0;
  int n = 0;
  for (const double x : v) {
    if (!std::isfinite(x)) continue;
    sum += x;
    ++n;
  }
  return n > 0 ? sum / n : kNaN;
}

std::string csvNumber(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : ""; }
std::string mdNumber(double v) { return std::isfinite(v) ? fmt::format("{:.4f}", v) : "—"; }

double jsonNumber(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : kNaN;
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
        if (key == "kind")
          g.topology.kind = kv.second.as<std::string>();
        else if (key == "n")
          g.topology.n = kv.second.as<std::size_t>();
        else if (key == "byzantine_budget" && kv.second.as<std::string>() == "f")
          g.topology.budget_is_f = true;
        else if (key == "byzantine_budget")
          g.topology.byzantine_budget = kv.second.as<std::size_t>();
        else
          g.topology.params[key] = scalarText(kv.second);
      }
      if (root["honest"]) g.honest = root["honest"].as<std::size_t>();
      if (g.topology.kind.empty() || (g.topology.n == 0 && g.honest == 0)) {
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

CellPlan planCell(const Grid& grid, const Cell& cell, std::uint16_t base_port) {
  std::vector<topologies::NodeSpec> nodes;
  std::vector<topologies::Edge> edges;
  std::size_t budget = 0;
  if (!grid.topology.file.empty()) {
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
    const std::size_t n = grid.honest > 0 ? grid.honest + f : s.n;
    if (s.kind == "two_worlds") p.byzantine = f;  // the attackers are the last f peers
    auto made = topologies::generateEdges(s.kind, n, p);
    if (!made) throw GridError(fmt::format("{}: topology: {}", grid.file.string(), made.error()));
    edges = std::move(*made);
    for (std::uint32_t i = 0; i < n; ++i) nodes.push_back({.id = i});
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
  // Byzantine peers: explicit ids, or the last f (an f axis overrides both).
  const std::string f_axis = cell.value("f");
  if (!f_axis.empty() || grid.byzantine.empty()) {
    const std::size_t f = f_axis.empty() ? grid.f : std::stoul(f_axis);
    if (f > n) throw GridError(fmt::format("{}: f = {} with {} peers", grid.file.string(), f, n));
    for (std::size_t i = n - f; i < n; ++i) plan.byzantine.push_back(nodes[i].id);
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
    if (axis == "attack" || axis == "f") continue;
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

CellResult readCellResult(const Cell& cell, const std::filesystem::path& run,
                          const std::string& status, double wall_seconds,
                          const std::vector<std::uint32_t>& byzantine) {
  CellResult r{.cell = cell,
               .status = status,
               .final_acc_mean = kNaN,
               .final_acc_min = kNaN,
               .best_acc_mean = kNaN,
               .consensus_distance = kNaN,
               .byzantine_leakage = kNaN,
               .detection_rate = kNaN,
               .wire_bytes = kNaN,
               .compression_ratio = kNaN,
               .wall_seconds = wall_seconds};
  std::ifstream in(run / "summary.json");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  std::vector<std::uint32_t> crashed;
  if (!j.is_discarded() && j.is_object()) {
    r.final_acc_mean = jsonNumber(j, "honest_accuracy_mean");
    r.final_acc_min = jsonNumber(j, "honest_accuracy_min");
    r.consensus_distance = jsonNumber(j, "consensus_distance");
    r.byzantine_leakage = jsonNumber(j, "byzantine_leakage");
    r.detection_rate = jsonNumber(j, "detection_rate");
    r.compression_ratio = jsonNumber(j, "compression_ratio");
    if (j.contains("crashed")) crashed = j["crashed"].get<std::vector<std::uint32_t>>();
  }
  const std::vector<PeerHistory> peers =
      readRunFolder(run, std::set<std::uint32_t>(byzantine.begin(), byzantine.end()));
  const RunSummary s = summarize(peers, {}, crashed);
  r.rounds = s.series.rounds;
  r.accuracy_mean = s.series.accuracy_mean;
  if (!s.series.accuracy_mean.empty()) {
    r.best_acc_mean =
        *std::max_element(s.series.accuracy_mean.begin(), s.series.accuracy_mean.end());
    r.wire_bytes = s.series.wire_bytes.back();
  }
  return r;
}

namespace {
// The figures a record carries, by name.
const std::vector<std::pair<const char*, double CellResult::*>> kRecordFigures{
    {"final_acc_mean", &CellResult::final_acc_mean},
    {"final_acc_min", &CellResult::final_acc_min},
    {"best_acc_mean", &CellResult::best_acc_mean},
    {"consensus_distance", &CellResult::consensus_distance},
    {"byzantine_leakage", &CellResult::byzantine_leakage},
    {"detection_rate", &CellResult::detection_rate},
    {"wire_bytes", &CellResult::wire_bytes},
    {"compression_ratio", &CellResult::compression_ratio},
    {"wall_seconds", &CellResult::wall_seconds}};
}  // namespace

std::string cellRecordJson(const CellRecord& record) {
  const CellResult& r = record.result;
  nlohmann::json j{{"status", r.status}, {"exit_code", record.exit_code}};
  for (const auto& [name, field] : kRecordFigures) {
    j[name] = std::isfinite(r.*field) ? nlohmann::json(r.*field) : nlohmann::json(nullptr);
  }
  j["rounds"] = r.rounds;
  nlohmann::json curve = nlohmann::json::array();
  for (double a : r.accuracy_mean)
    curve.push_back(std::isfinite(a) ? nlohmann::json(a) : nlohmann::json(nullptr));
  j["accuracy_mean"] = std::move(curve);
  return j.dump() + "\n";
}

std::optional<CellRecord> cellRecordFrom(const Cell& cell, const std::string& json) {
  const auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("status") || !j["status"].is_string() ||
      !j.contains("final_acc_mean")) {
    return std::nullopt;
  }
  CellRecord record{.result = {.cell = cell, .status = j["status"].get<std::string>()}};
  if (j.contains("exit_code") && j["exit_code"].is_number_integer()) {
    record.exit_code = j["exit_code"].get<int>();
  }
  CellResult& r = record.result;
  for (const auto& [name, field] : kRecordFigures) r.*field = jsonNumber(j, name);
  if (j.contains("rounds") && j.contains("accuracy_mean") && j["rounds"].is_array() &&
      j["accuracy_mean"].is_array() && j["rounds"].size() == j["accuracy_mean"].size()) {
    for (std::size_t i = 0; i < j["rounds"].size(); ++i) {
      if (!j["rounds"][i].is_number_unsigned()) return record;  // a damaged curve: figures only
    }
    for (std::size_t i = 0; i < j["rounds"].size(); ++i) {
      r.rounds.push_back(j["rounds"][i].get<std::uint64_t>());
      const auto& a = j["accuracy_mean"][i];
      r.accuracy_mean.push_back(a.is_number() ? a.get<double>() : kNaN);
    }
  }
  return record;
}

void writeCellRecord(const std::filesystem::path& file, const CellRecord& r) {
  std::ofstream(file) << cellRecordJson(r);
}

std::optional<CellRecord> readCellRecord(const Cell& cell, const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  return cellRecordFrom(cell, std::string(std::istreambuf_iterator<char>(in), {}));
}

std::string resultsCsv(const Grid& grid, const std::vector<CellResult>& results) {
  std::vector<std::string> columns;
  for (const char* always : {"attack", "rule"}) columns.push_back(always);
  for (const Axis& a : grid.axes) {
    if (a.name != "attack" && a.name != "rule") columns.push_back(a.name);
  }
  std::string out = fmt::format(
      "{},status,final_acc_mean,final_acc_min,best_acc_mean,consensus_distance,"
      "byzantine_leakage,detection_rate,wire_bytes,compression_ratio,wall_seconds\n",
      fmt::join(columns, ","));
  for (const CellResult& r : results) {
    std::vector<std::string> row;
    for (const auto& c : columns)
      row.push_back(r.cell.value(c, c == "attack" ? "none" : c == "rule" ? "config" : ""));
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", fmt::join(row, ","), r.status,
                       csvNumber(r.final_acc_mean), csvNumber(r.final_acc_min),
                       csvNumber(r.best_acc_mean), csvNumber(r.consensus_distance),
                       csvNumber(r.byzantine_leakage), csvNumber(r.detection_rate),
                       csvNumber(r.wire_bytes), csvNumber(r.compression_ratio),
                       csvNumber(r.wall_seconds));
  }
  return out;
}

std::string resultsMarkdown(const Grid& grid, const std::vector<CellResult>& results,
                            const std::vector<std::string>& plots) {
  std::vector<std::string> attacks, rules;
  for (const CellResult& r : results) {
    const std::string a = r.cell.value("attack", "none"), u = r.cell.value("rule", "config");
    if (std::find(attacks.begin(), attacks.end(), a) == attacks.end()) attacks.push_back(a);
    if (std::find(rules.begin(), rules.end(), u) == rules.end()) rules.push_back(u);
  }
  std::string out = fmt::format(
      "# Results of {}\n\nBase config `{}`; {} cells ({} ok, {} failed, {} did not run).\n",
      grid.file.filename().string(), grid.config.filename().string(), results.size(),
      std::count_if(results.begin(), results.end(), [](const auto& r) { return r.status == "ok"; }),
      std::count_if(results.begin(), results.end(),
                    [](const auto& r) { return r.status == "failed"; }),
      std::count_if(results.begin(), results.end(),
                    [](const auto& r) { return r.status == "error"; }));
  const auto table = [&](const char* title, double CellResult::*field) {
    out += fmt::format(
        "\n## {} (rows: attack, columns: rule; mean over the other axes)\n\n| attack | {} |\n|---|",
        title, fmt::join(rules, " | "));
    for (std::size_t k = 0; k < rules.size(); ++k) out += "---|";
    out += "\n";
    for (const auto& a : attacks) {
      out += "| " + a + " |";
      for (const auto& u : rules) {
        std::vector<double> v;
        for (const CellResult& r : results) {
          if (r.cell.value("attack", "none") == a && r.cell.value("rule", "config") == u)
            v.push_back(r.*field);
        }
        out += " " + mdNumber(mean(v)) + " |";
      }
      out += "\n";
    }
  };
  std::vector<std::string> others;  // axes besides attack and rule
  for (const Axis& a : grid.axes) {
    if (a.name != "attack" && a.name != "rule") others.push_back(a.name);
  }
  // The attack x rule pivots average over the other axes: useful when rules vary, misleading
  // when only a codec or f does (then the per-cell table below says it all).
  if (rules.size() > 1 || others.empty()) {
    table("Final honest accuracy, mean over honest peers", &CellResult::final_acc_mean);
    table("Final honest accuracy, worst honest peer", &CellResult::final_acc_min);
    table("Detection rate", &CellResult::detection_rate);
  }
  if (std::find(others.begin(), others.end(), "f") != others.end()) {
    std::vector<std::string> fs;
    for (const CellResult& r : results) {
      if (std::find(fs.begin(), fs.end(), r.cell.value("f")) == fs.end())
        fs.push_back(r.cell.value("f"));
    }
    for (const auto& a : attacks) {
      out += fmt::format(
          "\n## Breakdown under {}: final honest accuracy (rows: rule, columns: Byzantine peers "
          "f)\n\n"
          "| rule | {} |\n|---|",
          a, fmt::join(fs, " | "));
      for (std::size_t k = 0; k < fs.size(); ++k) out += "---|";
      out += "\n";
      for (const auto& u : rules) {
        out += "| " + u + " |";
        for (const auto& f : fs) {
          std::vector<double> v;
          for (const CellResult& r : results) {
            if (r.cell.value("attack", "none") == a && r.cell.value("rule", "config") == u &&
                r.cell.value("f") == f) {
              v.push_back(r.final_acc_mean);
            }
          }
          out += " " + mdNumber(mean(v)) + " |";
        }
        out += "\n";
      }
    }
  }
  if (!others.empty()) {
    out += fmt::format(
        "\n## Every cell\n\n| attack | rule | {} | status | final acc mean | final acc min | "
        "detection | "
        "wire MB per honest peer | compression |\n|---|---|",
        fmt::join(others, " | "));
    for (std::size_t k = 0; k < others.size() + 6; ++k) out += "---|";
    out += "\n";
    for (const CellResult& r : results) {
      out += fmt::format("| {} | {} |", r.cell.value("attack", "none"),
                         r.cell.value("rule", "config"));
      for (const auto& o : others) out += " `" + r.cell.value(o) + "` |";
      out += fmt::format(
          " {} | {} | {} | {} | {} | {} |\n", r.status, mdNumber(r.final_acc_mean),
          mdNumber(r.final_acc_min), mdNumber(r.detection_rate),
          std::isfinite(r.wire_bytes) ? fmt::format("{:.1f}", r.wire_bytes / 1e6) : "—",
          std::isfinite(r.compression_ratio) ? fmt::format("{:.1f}x", r.compression_ratio) : "—");
    }
  }
  if (!plots.empty()) {
    out += "\n## Plots\n\n";
    for (const auto& p : plots) out += fmt::format("![{0}](plots/{0})\n", p);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> resultPlots(
    const Grid& grid, const std::vector<CellResult>& results) {
  std::vector<std::pair<std::string, std::string>> out;
  // The label of a cell without its attack (and f, for breakdowns).
  const auto label = [](const Cell& c, std::set<std::string> skip) {
    std::string s;
    for (const auto& [axis, v] : c.values) {
      if (!skip.contains(axis)) s += (s.empty() ? "" : " ") + axis + "=" + v;
    }
    return s.empty() ? std::string("run") : s;
  };
  std::vector<std::string> attacks;
  for (const CellResult& r : results) {
    const std::string a = r.cell.value("attack", "none");
    if (std::find(attacks.begin(), attacks.end(), a) == attacks.end()) attacks.push_back(a);
  }
  for (const auto& a : attacks) {
    Chart c{.title = "Honest mean accuracy under " + a, .x_label = "round", .y_label = "accuracy"};
    for (const CellResult& r : results) {
      if (r.cell.value("attack", "none") != a || r.rounds.empty()) continue;
      c.series.push_back({label(r.cell, {"attack"}), kPalette[c.series.size() % kPalette.size()],
                          std::vector<double>(r.rounds.begin(), r.rounds.end()), r.accuracy_mean});
    }
    // Cells carried over from a record without its curve draw nothing: no empty chart.
    if (!c.series.empty()) out.emplace_back("accuracy-" + a + ".svg", svgChart(c));
  }
  Chart bytes{.title = "Final accuracy vs wire bytes",
              .x_label = "MB sent per honest peer",
              .y_label = "accuracy"};
  for (const CellResult& r : results) {
    if (!std::isfinite(r.wire_bytes)) continue;
    bytes.series.push_back({label(r.cell, {}),
                            kPalette[bytes.series.size() % kPalette.size()],
                            {r.wire_bytes / 1e6},
                            {r.final_acc_mean}});
  }
  out.emplace_back("accuracy-vs-bytes.svg", svgChart(bytes));
  if (std::any_of(grid.axes.begin(), grid.axes.end(),
                  [](const Axis& x) { return x.name == "f"; })) {
    for (const auto& a : attacks) {
      Chart c{.title = "Breakdown under " + a,
              .x_label = "Byzantine peers f",
              .y_label = "final accuracy"};
      std::map<std::string, Series> by_label;
      for (const CellResult& r : results) {
        if (r.cell.value("attack", "none") != a) continue;
        Series& s = by_label[label(r.cell, {"attack", "f"})];
        s.x.push_back(std::stod(r.cell.value("f", "0")));
        s.y.push_back(r.final_acc_mean);
      }
      for (auto& [name, s] : by_label) {
        s.name = name;
        s.colour = kPalette[c.series.size() % kPalette.size()];
        c.series.push_back(std::move(s));
      }
      out.emplace_back("breakdown-" + a + ".svg", svgChart(c));
    }
  }
  return out;
}

}  // namespace phalanx::tools
