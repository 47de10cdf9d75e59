#include "tools/grid_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "tools/report.h"
#include "topologies/analysis.h"

namespace phalanx::tools {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const std::vector<std::string> kPalette{"#08519c", "#a63603", "#006d2c", "#54278f",
                                        "#b30000", "#636363", "#e6550d", "#3182bd",
                                        "#31a354", "#756bb1", "#de2d26", "#969696"};

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

// A cell's value on an axis, attack and rule defaulted as every table shows them.
std::string axisValue(const Cell& c, const std::string& axis) {
  return c.value(axis, axis == "attack" ? "none" : axis == "rule" ? "config" : "");
}

// attack and rule (every cell has them), then the grid's other axes in file order, less `skip`.
std::vector<std::string> reportColumns(const Grid& grid, const std::string& skip = "") {
  std::vector<std::string> columns{"attack", "rule"};
  for (const Axis& a : grid.axes) {
    if (a.name != "attack" && a.name != "rule" && a.name != skip) columns.push_back(a.name);
  }
  return columns;
}

// A markdown table's header row and its separator.
std::string mdHeader(const std::vector<std::string>& columns) {
  std::string out = fmt::format("| {} |\n|", fmt::join(columns, " | "));
  for (std::size_t k = 0; k < columns.size(); ++k) out += "---|";
  return out + "\n";
}
std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The breakdown bound's ratio 2b / mu_2 (topologies::breakdownCheck) of each f's placement, in
// ascending f; an f whose cell cannot be planned or checked is left out.
std::vector<std::pair<double, double>> breakdownRatios(const Grid& grid,
                                                       const std::vector<CellResult>& results) {
  std::map<double, double> by_f;
  for (const CellResult& r : results) {
    const std::string f = r.cell.value("f");
    if (f.empty() || by_f.contains(std::stod(f))) continue;
    try {
      const CellPlan plan = planCell(grid, r.cell, 7000);
      const std::set<topologies::NodeId> ids(plan.byzantine.begin(), plan.byzantine.end());
      by_f[std::stod(f)] = topologies::breakdownCheck(plan.topology, ids).ratio;
    } catch (const std::exception&) {
      // A grid whose topology cannot be built here (a missing file) has no bound to draw.
    }
  }
  return {by_f.begin(), by_f.end()};
}

// The f at which 2b / mu_2 reaches 1, interpolated linearly between the grid's f values (exact
// when b grows with f on a fixed honest graph, as in two_worlds); the first f when it is
// already beyond; NaN when no f reaches it.
double breakdownF(const std::vector<std::pair<double, double>>& ratios) {
  for (std::size_t k = 0; k < ratios.size(); ++k) {
    const auto [f, r] = ratios[k];
    if (r < 1) continue;
    if (k == 0 || !std::isfinite(r)) return f;
    const auto [f0, r0] = ratios[k - 1];
    return f0 + (1 - r0) * (f - f0) / (r - r0);
  }
  return kNaN;
}

// Each setting of the axes other than seed over its seeds: mean ± standard error of the honest
// mean, the worst seed's, and the worst honest peer on any seed. A seed without a figure (it
// diverged or did not run) is counted and named, not averaged.
std::string seedsTable(const Grid& grid, const std::vector<CellResult>& results) {
  const std::vector<std::string> columns = reportColumns(grid, "seed");
  const auto keyOf = [&](const Cell& c) {
    std::vector<std::string> key;
    for (const auto& name : columns) key.push_back(axisValue(c, name));
    return key;
  };
  std::vector<std::vector<std::string>> keys;
  std::map<std::vector<std::string>, std::vector<const CellResult*>> groups;
  for (const CellResult& r : results) {
    const auto key = keyOf(r.cell);
    if (!groups.contains(key)) keys.push_back(key);
    groups[key].push_back(&r);
  }
  std::string out =
      "\n## Over seeds: final honest accuracy (mean over seeds ± standard error; the worst "
      "seed's mean; the worst honest peer on any seed)\n\n" +
      mdHeader(concat(columns, {"seeds", "mean ± SE", "worst seed", "worst peer"}));
  for (const auto& key : keys) {
    std::vector<double> v;
    std::vector<std::string> missing;
    double worst = std::numeric_limits<double>::infinity(), worst_peer = worst;
    std::string worst_seed;
    for (const CellResult* r : groups[key]) {
      const std::string seed = r->cell.value("seed");
      if (!std::isfinite(r->final_acc_mean)) {
        missing.push_back(seed);
        continue;
      }
      v.push_back(r->final_acc_mean);
      if (r->final_acc_mean < worst) {
        worst = r->final_acc_mean;
        worst_seed = seed;
      }
      if (std::isfinite(r->final_acc_min)) worst_peer = std::min(worst_peer, r->final_acc_min);
    }
    const double m = mean(v);
    double ss = 0;
    for (const double x : v) ss += (x - m) * (x - m);
    const std::string se =
        v.size() > 1
            ? fmt::format(" ± {:.4f}", std::sqrt(ss / double(v.size() - 1) / double(v.size())))
            : "";
    out += fmt::format(
        "| {} | {}{} | {}{} | {} | {} |\n", fmt::join(key, " | "), v.size(),
        missing.empty() ? "" : fmt::format(" (no figure: seed {})", fmt::join(missing, ", ")),
        mdNumber(m), se,
        v.empty() ? std::string("—") : fmt::format("{:.4f} (seed {})", worst, worst_seed),
        mdNumber(std::isfinite(worst_peer) ? worst_peer : kNaN));
  }
  return out;
}

}  // namespace

std::string resultsCsv(const Grid& grid, const std::vector<CellResult>& results) {
  const std::vector<std::string> columns = reportColumns(grid);
  std::string out = fmt::format(
      "{},status,final_acc_mean,final_acc_min,best_acc_mean,consensus_distance,"
      "byzantine_leakage,detection_rate,wire_bytes,compression_ratio,wall_seconds,uplink_bytes,"
      "downlink_bytes,downlink_dense_bytes\n",
      fmt::join(columns, ","));
  for (const CellResult& r : results) {
    std::vector<std::string> row;
    for (const auto& c : columns) row.push_back(axisValue(r.cell, c));
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", fmt::join(row, ","),
        kCellStatuses.name(r.status), csvNumber(r.final_acc_mean), csvNumber(r.final_acc_min),
        csvNumber(r.best_acc_mean), csvNumber(r.consensus_distance), csvNumber(r.byzantine_leakage),
        csvNumber(r.detection_rate), csvNumber(r.wire_bytes), csvNumber(r.compression_ratio),
        csvNumber(r.wall_seconds), csvNumber(r.uplink_bytes), csvNumber(r.downlink_bytes),
        csvNumber(r.downlink_dense_bytes));
  }
  return out;
}

// A placement axis: where each strategy put the attackers (the ids and the breakdown check of
// the placement), then per attack the rules' accuracy under each placement, with the seeded
// random placements' mean as the row a worst-case placement is measured against.
std::string placementTables(const Grid& grid, const std::vector<CellResult>& results,
                            const std::vector<std::string>& attacks,
                            const std::vector<std::string>& rules) {
  std::vector<std::string> placements;
  std::string out =
      "\n## Where the attackers sit (topologies::placeByzantine; 2b / mu_2 as in "
      "docs/ALGORITHMS.md §2)\n\n" +
      mdHeader({"placement", "Byzantine ids", "honest mu_2", "b", "2b / mu_2"});
  for (const CellResult& r : results) {
    const std::string p = r.cell.value("placement", "last");
    if (std::find(placements.begin(), placements.end(), p) != placements.end()) continue;
    placements.push_back(p);
    try {
      const CellPlan plan = planCell(grid, r.cell, 7000);
      const std::set<topologies::NodeId> ids(plan.byzantine.begin(), plan.byzantine.end());
      const auto check = topologies::breakdownCheck(plan.topology, ids);
      out += fmt::format("| {} | {} | {:.3f} | {} | {:.3f} |\n", p, fmt::join(ids, ", "),
                         check.honest_connectivity, check.byzantine_per_node, check.ratio);
    } catch (const std::exception& e) {
      out += fmt::format("| {} | — ({}) | — | — | — |\n", p, e.what());
    }
  }
  const auto isRandom = [](const std::string& p) { return p.starts_with("random"); };
  const std::size_t randoms = std::count_if(placements.begin(), placements.end(), isRandom);
  for (const auto& a : attacks) {
    out += fmt::format(
               "\n## Placement under {}: final honest accuracy, mean over honest peers (worst "
               "honest peer) (rows: placement, columns: rule)\n\n",
               a) +
           mdHeader(concat({"placement"}, rules));
    const auto row = [&](const std::string& label, const auto& takes) {
      out += "| " + label + " |";
      for (const auto& u : rules) {
        std::vector<double> mean_acc, worst_acc;
        for (const CellResult& r : results) {
          if (axisValue(r.cell, "attack") == a && axisValue(r.cell, "rule") == u &&
              takes(r.cell.value("placement", "last"))) {
            mean_acc.push_back(r.final_acc_mean);
            worst_acc.push_back(r.final_acc_min);
          }
        }
        out += fmt::format(" {} ({}) |", mdNumber(mean(mean_acc)), mdNumber(mean(worst_acc)));
      }
      out += "\n";
    };
    for (const auto& p : placements) row(p, [&](const std::string& q) { return q == p; });
    if (randoms > 1) row(fmt::format("random, mean of {}", randoms), isRandom);
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
      std::count_if(results.begin(), results.end(),
                    [](const auto& r) { return r.status == CellStatus::kOk; }),
      std::count_if(results.begin(), results.end(),
                    [](const auto& r) { return r.status == CellStatus::kFailed; }),
      std::count_if(results.begin(), results.end(),
                    [](const auto& r) { return r.status == CellStatus::kError; }));
  const auto table = [&](const char* title, double CellResult::*field) {
    out +=
        fmt::format("\n## {} (rows: attack, columns: rule; mean over the other axes)\n\n", title) +
        mdHeader(concat({"attack"}, rules));
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
    const auto ratios = breakdownRatios(grid, results);
    if (!ratios.empty()) {
      std::vector<std::string> parts;
      for (const auto& [f, r] : ratios) parts.push_back(fmt::format("{:.3f} at f = {}", r, f));
      const double at = breakdownF(ratios);
      out += fmt::format("\nBreakdown bound (docs/ALGORITHMS.md §2): 2b / mu_2 = {}; {}.\n",
                         fmt::join(parts, ", "),
                         std::isfinite(at)
                             ? fmt::format("no rule has a guarantee from f = {:.1f} on", at)
                             : std::string("every f is within it"));
    }
    for (const auto& a : attacks) {
      out += fmt::format(
                 "\n## Breakdown under {}: final honest accuracy (rows: rule, columns: Byzantine "
                 "peers f)\n\n",
                 a) +
             mdHeader(concat({"rule"}, fs));
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
  if (std::find(others.begin(), others.end(), "placement") != others.end())
    out += placementTables(grid, results, attacks, rules);
  const auto seeds = std::find_if(grid.axes.begin(), grid.axes.end(),
                                  [](const Axis& a) { return a.name == "seed"; });
  if (seeds != grid.axes.end() && seeds->values.size() > 1) out += seedsTable(grid, results);
  if (!others.empty()) {
    out += "\n## Every cell\n\n" +
           mdHeader(concat(concat({"attack", "rule"}, others),
                           {"status", "final acc mean", "final acc min", "detection",
                            "wire MB per honest peer", "compression"}));
    for (const CellResult& r : results) {
      out += fmt::format("| {} | {} |", r.cell.value("attack", "none"),
                         r.cell.value("rule", "config"));
      for (const auto& o : others) out += " `" + r.cell.value(o) + "` |";
      out += fmt::format(
          " {} | {} | {} | {} | {} | {} |\n", kCellStatuses.name(r.status),
          mdNumber(r.final_acc_mean), mdNumber(r.final_acc_min), mdNumber(r.detection_rate),
          std::isfinite(r.wire_bytes) ? fmt::format("{:.1f}", r.wire_bytes / 1e6) : "—",
          std::isfinite(r.compression_ratio) ? fmt::format("{:.1f}x", r.compression_ratio) : "—");
    }
  }
  // exchange: hub cells: what each direction carried, and what compressing the broadcast saved.
  if (std::any_of(results.begin(), results.end(),
                  [](const CellResult& r) { return std::isfinite(r.downlink_bytes); })) {
    out +=
        "\n## Hub traffic (honest peers; MB)\n\n" +
        mdHeader(concat(concat({"attack", "rule"}, others), {"uplink", "downlink", "dense downlink",
                                                             "downlink saved", "downlink ratio"}));
    const auto mb = [](double v) {
      return std::isfinite(v) ? fmt::format("{:.2f}", v / 1e6) : "—";
    };
    for (const CellResult& r : results) {
      if (!std::isfinite(r.downlink_bytes)) continue;
      out += fmt::format("| {} | {} |", r.cell.value("attack", "none"),
                         r.cell.value("rule", "config"));
      for (const auto& o : others) out += " `" + r.cell.value(o) + "` |";
      const double ratio = r.downlink_bytes > 0 ? r.downlink_dense_bytes / r.downlink_bytes : NAN;
      out += fmt::format(" {} | {} | {} | {} | {} |\n", mb(r.uplink_bytes), mb(r.downlink_bytes),
                         mb(r.downlink_dense_bytes), mb(r.downlink_dense_bytes - r.downlink_bytes),
                         std::isfinite(ratio) ? fmt::format("{:.1f}x", ratio) : "—");
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
    const double bound = breakdownF(breakdownRatios(grid, results));
    for (const auto& a : attacks) {
      Chart c{.title = "Breakdown under " + a,
              .x_label = "Byzantine peers f",
              .y_label = "final accuracy",
              .y_bounds = std::pair(0.0, 1.0)};
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
      if (std::isfinite(bound)) {
        c.series.push_back({fmt::format("breakdown bound 2b = mu_2 (f = {:.1f})", bound),
                            "#000000",
                            {bound, bound},
                            {0.0, 1.0},
                            true});
      }
      out.emplace_back("breakdown-" + a + ".svg", svgChart(c));
    }
  }
  return out;
}

}  // namespace phalanx::tools
