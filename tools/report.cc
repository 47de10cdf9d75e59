#include "tools/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <regex>
#include <vector>

namespace phalanx::tools {
namespace {

// A config or command line as shown in a report: a control token's value replaced (a report is
// shared; the token opens /control and /model). `token: X` in YAML, `control.token=X` in a --set.
std::string withoutSecrets(const std::string& text) {
  static const std::regex token(R"((\btoken\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,}#]+))");
  return std::regex_replace(text, token, "$1<redacted>");
}

// Inside every SVG, so a chart saved alone looks as it does in the report.
constexpr const char* kSvgStyle =
    "text { font-family: sans-serif; } .title { font-size: 14px; font-weight: bold; } "
    ".tick { font-size: 11px; fill: #444; } .label { font-size: 12px; } "
    ".plot { fill: #fafafa; stroke: #888; } .grid { stroke: #e3e3e3; }";

// The legend sits between the title and the plot, where no data can be under it.
constexpr int kWidth = 640, kHeight = 320, kLeft = 70, kRight = 20, kTop = 46, kBottom = 46;
constexpr int kLegendY = 30;

std::string number(double v) {
  if (v == 0) return "0";
  const double a = std::abs(v);
  if (a >= 1e6 || a < 1e-3) return fmt::format("{:.2g}", v);
  if (a >= 100) return fmt::format("{:.0f}", v);
  return fmt::format("{:.3g}", v);
}

}  // namespace

std::vector<double> niceTicks(double lo, double hi, int target, double min_step) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = std::max((hi - lo) / std::max(target, 1), min_step);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * magnitude;
  for (const double m : {1.0, 2.0, 5.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9) * step;
  for (double t = first;; t = first + step * double(ticks.size())) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
    if (t >= hi - step * 1e-9) break;
  }
  return ticks;
}

std::string svgChart(const Chart& c) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  const auto ty = [&](double y) { return c.log_y ? std::log10(std::max(y, 1e-12)) : y; };
  // A point a log axis cannot show (y <= 0) is left out like a non-finite one.
  const auto drawable = [&](double x, double y) {
    return std::isfinite(x) && std::isfinite(y) && (!c.log_y || y > 0);
  };
  for (const auto& s : c.series) {
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!drawable(s.x[i], s.y[i])) continue;
      x0 = std::min(x0, s.x[i]);
      x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, ty(s.y[i]));
      y1 = std::max(y1, ty(s.y[i]));
    }
  }
  std::string out = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' viewBox='0 0 {} {}' "
      "role='img' aria-label='{}'>\n<style>{}</style>\n<text x='{}' y='20' "
      "class='title'>{}</text>\n",
      kWidth, kHeight, kWidth, kHeight, escapeHtml(c.title), kSvgStyle, kLeft, escapeHtml(c.title));
  if (!std::isfinite(x0)) {
    return out + fmt::format("<text x='{}' y='{}'>no data</text></svg>\n", kLeft, kHeight / 2);
  }
  // Rounds and steps are whole numbers: their ticks too (one evaluation is one tick, mid-axis).
  bool whole_x = true;
  for (const auto& s : c.series) {
    for (std::size_t i = 0; i < s.x.size(); ++i)
      whole_x &= !drawable(s.x[i], s.y[i]) || s.x[i] == std::round(s.x[i]);
  }
  if (x1 == x0) {
    x0 -= whole_x ? 1 : 0.5;
    x1 += whole_x ? 1 : 0.5;
  }
  if (y1 == y0) {
    y0 -= std::max(0.5 * std::abs(y0), 0.05);
    y1 += std::max(0.5 * std::abs(y1), 0.05);
  }
  // Round tick values: the x axis from the first to the last point; the y axis widened to
  // whole ticks (whole decades on a log axis), inside the figure's bounds where it has them.
  std::vector<double> x_ticks = niceTicks(x0, x1, 5, whole_x ? 1.0 : 0.0);
  std::erase_if(x_ticks,
                [&](double t) { return t < x0 - 1e-9 * (x1 - x0) || t > x1 + 1e-9 * (x1 - x0); });
  std::vector<double> y_ticks;
  if (c.y_bounds && !c.log_y) {
    const double lo = c.y_bounds->first, hi = c.y_bounds->second;
    y_ticks = niceTicks(std::max(y0, lo), std::min(y1, hi));
    std::erase_if(y_ticks, [&](double t) { return t < lo - 1e-12 || t > hi + 1e-12; });
    if (y_ticks.size() < 2) y_ticks = niceTicks(lo, hi);
    y0 = y_ticks.front();
    y1 = y_ticks.back();
  } else if (c.log_y) {
    y0 = std::floor(y0);
    y1 = std::max(std::ceil(y1), y0 + 1);
    const double every = std::ceil((y1 - y0) / 5);
    for (double t = y0; t <= y1 + 1e-9; t += every) y_ticks.push_back(t);
    y1 = y_ticks.back();
  } else {
    y_ticks = niceTicks(y0, y1);
    y0 = y_ticks.front();
    y1 = y_ticks.back();
  }
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  const auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * pw; };
  const auto py = [&](double y) { return kTop + ph - (ty(y) - y0) / (y1 - y0) * ph; };
  out += fmt::format("<rect x='{}' y='{}' width='{}' height='{}' class='plot'/>\n", kLeft, kTop, pw,
                     ph);
  for (const double fx : x_ticks) {
    const double gx = kLeft + (fx - x0) / (x1 - x0) * pw;
    out += fmt::format("<line x1='{:.1f}' y1='{}' x2='{:.1f}' y2='{}' class='grid'/>", gx, kTop, gx,
                       kTop + ph);
    out += fmt::format("<text x='{:.1f}' y='{}' class='tick' text-anchor='middle'>{}</text>\n", gx,
                       kTop + ph + 16, number(fx));
  }
  for (const double fy : y_ticks) {
    const double gy = kTop + ph - (fy - y0) / (y1 - y0) * ph;
    out += fmt::format("<line x1='{}' y1='{:.1f}' x2='{}' y2='{:.1f}' class='grid'/>", kLeft, gy,
                       kLeft + pw, gy);
    out += fmt::format("<text x='{}' y='{:.1f}' class='tick' text-anchor='end'>{}</text>\n",
                       kLeft - 6, gy + 4, number(c.log_y ? std::pow(10.0, fy) : fy));
  }
  out += fmt::format("<text x='{:.1f}' y='{}' class='label' text-anchor='middle'>{}</text>\n",
                     kLeft + pw / 2, kHeight - 8, escapeHtml(c.x_label));
  out += fmt::format(
      "<text x='14' y='{:.1f}' class='label' text-anchor='middle' "
      "transform='rotate(-90 14 {:.1f})'>{}</text>\n",
      kTop + ph / 2, kTop + ph / 2, escapeHtml(c.y_label + (c.log_y ? " (log)" : "")));
  double legend_x = kLeft + 10;
  for (const auto& s : c.series) {
    std::string points;
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!drawable(s.x[i], s.y[i])) continue;
      points += fmt::format("{:.1f},{:.1f} ", px(s.x[i]), py(s.y[i]));
    }
    out += fmt::format("<polyline fill='none' stroke='{}' stroke-width='2'{} points='{}'/>\n",
                       s.colour, s.dashed ? " stroke-dasharray='6 4'" : "", points);
    if (s.x.size() == 1 && drawable(s.x[0], s.y[0])) {
      out += fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='3' fill='{}'/>\n", px(s.x[0]),
                         py(s.y[0]), s.colour);
    }
    const double lx = legend_x;
    legend_x += 30 + 6.5 * double(s.name.size());  // about 6.5 px per character at 11 px
    out += fmt::format(
        "<rect x='{:.0f}' y='{}' width='12' height='4' fill='{}'/><text x='{:.0f}' y='{}' "
        "class='tick'>{}</text>\n",
        lx, kLegendY, s.colour, lx + 16, kLegendY + 5, escapeHtml(s.name));
  }
  return out + "</svg>\n";
}

namespace {

// Rows: honest peers; columns: every peer heard; cell: share of rounds it was excluded.
std::string heatmap(const RunSummary& s) {
  std::vector<std::uint32_t> columns;
  for (const auto& [_, row] : s.exclusion_share) {
    for (const auto& [j, __] : row) columns.push_back(j);
  }
  std::sort(columns.begin(), columns.end());
  columns.erase(std::unique(columns.begin(), columns.end()), columns.end());
  if (columns.empty()) return "<p>No peer was mixed.</p>\n";
  std::string out = "<table class='heat'><tr><th>honest peer \\ peer</th>";
  for (const std::uint32_t j : columns) {
    const bool byz = std::find(s.byzantine.begin(), s.byzantine.end(), j) != s.byzantine.end();
    out += fmt::format("<th{}>{}{}</th>", byz ? " class='byz'" : "", j, byz ? "*" : "");
  }
  out += "</tr>\n";
  for (const auto& [i, row] : s.exclusion_share) {
    out += fmt::format("<tr><th>{}</th>", i);
    for (const std::uint32_t j : columns) {
      const auto it = row.find(j);
      if (it == row.end()) {
        out += "<td class='none'></td>";
        continue;
      }
      const int shade = int(std::lround(255 * (1 - it->second)));
      out += fmt::format(
          "<td style='background:rgb(255,{},{})' title='peer {} excluded peer {} in {:.0f}% "
          "of the rounds it mixed it'>{:.2f}</td>",
          shade, shade, i, j, 100 * it->second, it->second);
    }
    out += "</tr>\n";
  }
  return out +
         "</table>\n<p class='note'>* Byzantine (known to the monitor, not to the peers). "
         "Cell: share of the rounds in which the row's rule excluded the column's vector.</p>\n";
}

}  // namespace

std::string escapeHtml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::vector<NamedChart> reportCharts(const RunSummary& s, std::span<const MonitorSample> samples,
                                     const RunSummary* baseline) {
  const RoundSeries& r = s.series;
  // The outer loop's rounds are H local steps each: its x axis counts local steps, so runs with
  // different H (and per-step gossip) line up.
  const bool steps = !r.local_steps.empty();
  const std::vector<double> rounds =
      steps ? std::vector<double>(r.local_steps.begin(), r.local_steps.end())
            : std::vector<double>(r.rounds.begin(), r.rounds.end());
  Chart accuracy{.title = "Honest test accuracy",
                 .x_label = steps ? "local steps" : "round",
                 .y_label = "accuracy",
                 .y_bounds = std::pair{0.0, 1.0}};
  accuracy.series = {{"max", "#9ecae1", rounds, r.accuracy_max},
                     {"mean", "#08519c", rounds, r.accuracy_mean},
                     {"min", "#6baed6", rounds, r.accuracy_min}};
  Chart timed{.title = "Honest test accuracy over time",
              .x_label = "seconds (summed round times, mean over honest peers)",
              .y_label = "mean accuracy",
              .y_bounds = std::pair{0.0, 1.0}};
  timed.series = {{"mean", "#08519c", r.seconds, r.accuracy_mean}};
  if (baseline != nullptr) {
    const RoundSeries& b = baseline->series;
    const bool baseline_steps = steps && !b.local_steps.empty();
    accuracy.series.push_back({"clean baseline (mean)", "#636363",
                               baseline_steps
                                   ? std::vector<double>(b.local_steps.begin(), b.local_steps.end())
                                   : std::vector<double>(b.rounds.begin(), b.rounds.end()),
                               b.accuracy_mean, true});
    timed.series.push_back({"clean baseline (mean)", "#636363", b.seconds, b.accuracy_mean, true});
  }
  Chart consensus{.title = "Consensus distance among honest peers",
                  .x_label = "round",
                  .y_label = "(1/h) sum ||x_i - mean||^2",
                  .log_y = true};
  Series c{"measured", "#a63603", {}, {}};
  for (const auto& m : samples) {
    c.x.push_back(double(m.round));
    c.y.push_back(m.consensus_distance);
  }
  consensus.series = {c};
  Chart bytes{.title = "Accuracy vs wire bytes",
              .x_label = "bytes sent per honest peer (MB)",
              .y_label = "mean accuracy"};
  std::vector<double> megabytes;
  for (const double b : r.wire_bytes) megabytes.push_back(b / 1e6);
  bytes.series = {{"mean accuracy", "#006d2c", megabytes, r.accuracy_mean}};
  bytes.y_bounds = std::pair{0.0, 1.0};
  // Per round the share is a few honest peers' verdicts: a 10-round mean reads better.
  Chart detection{.title = "Detection: honest peers excluding a Byzantine vector",
                  .x_label = "round",
                  .y_label = "share of honest peers (10-round mean)",
                  .y_bounds = std::pair{0.0, 1.0}};
  Series d{"detection", "#54278f", {}, {}};
  for (std::size_t i = 0; i < r.detection.size(); ++i) {
    const std::size_t from = i >= 9 ? i - 9 : 0;
    double sum = 0;
    for (std::size_t k = from; k <= i; ++k) sum += r.detection[k];
    d.x.push_back(double(r.detection_rounds[i]));
    d.y.push_back(sum / double(i - from + 1));
  }
  detection.series = {d};
  return {{"accuracy", svgChart(accuracy)},
          {"accuracy-over-time", svgChart(timed)},
          {"consensus", svgChart(consensus)},
          {"accuracy-vs-bytes", svgChart(bytes)},
          {"detection", svgChart(detection)}};
}

namespace {

std::string ids(const std::vector<std::uint32_t>& list) {
  if (list.empty()) return "none";
  std::string out;
  for (const std::uint32_t id : list) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out;
}

// A figure as text: NaN (nothing measured) as a dash.
std::string shown(double v, const char* format) {
  return std::isfinite(v) ? fmt::format(fmt::runtime(format), v) : std::string("—");
}

}  // namespace

std::string summaryTiles(const RunSummary& s, const RunSummary* baseline) {
  struct Tile {
    std::string label, value, detail;
    bool alarm = false;
  };
  // The accuracy beside a clean run's: the one comparison a reader asks for first.
  std::string against_clean;
  if (baseline != nullptr) {
    const double gap = s.honest_accuracy_mean - baseline->honest_accuracy_mean;
    against_clean = fmt::format(
        "<br>clean baseline {}; this run {}", shown(baseline->honest_accuracy_mean, "{:.4f}"),
        std::isfinite(gap) ? fmt::format("{:+.1f} points", 100 * gap) : std::string("—"));
  }
  std::vector<Tile> tiles = {
      {"honest test accuracy (mean)", shown(s.honest_accuracy_mean, "{:.4f}"),
       fmt::format("min {} · max {}{}", shown(s.honest_accuracy_min, "{:.4f}"),
                   shown(s.honest_accuracy_max, "{:.4f}"), against_clean)},
      {"detection rate", shown(s.detection_rate, "{:.3f}"),
       "share of honest peer-rounds that excluded a Byzantine vector they mixed"},
      {"Byzantine leakage", shown(s.byzantine_leakage, "{:.3f}"),
       "share of the Byzantine vectors mixed that the honest rules kept"},
      {"honest vectors excluded", shown(s.honest_excluded, "{:.3f}"),
       "share of the honest vectors mixed that the honest rules left out (the rule's price)"},
      {"wire bytes", versusDense(s.compression_ratio), "than the same messages as dense fp32"},
      {"consensus distance", shown(s.consensus_distance, "{:.3g}"),
       "(1/h) Σ ‖x_i − x̄‖² over the honest models, last measured"},
      {"rounds", std::to_string(s.rounds),
       fmt::format("round time mean {} s, median {} s, p99 {} s, max {} s",
                   shown(s.round_seconds_mean, "{:.3f}"), shown(s.round_seconds_p50, "{:.3f}"),
                   shown(s.round_seconds_p99, "{:.3f}"), shown(s.round_seconds_max, "{:.3f}"))},
      {"crashed peers", ids(s.crashed), "processes that died before their last round",
       !s.crashed.empty()},
      {"diverged honest peers", ids(s.diverged), "stopped: their model went NaN/Inf",
       !s.diverged.empty()},
      {"Byzantine peers", ids(s.byzantine), "known to the monitor, not to the peers"},
  };
  if (std::isfinite(s.downlink_bytes)) {  // exchange: hub
    const double ratio = s.downlink_bytes > 0 ? s.downlink_dense_bytes / s.downlink_bytes : NAN;
    tiles.insert(
        tiles.begin() + 4,
        {"hub traffic",
         fmt::format("{} MB up · {} MB down", shown(s.uplink_bytes / 1e6, "{:.2f}"),
                     shown(s.downlink_bytes / 1e6, "{:.2f}")),
         fmt::format("honest leaves' uplink, the hub's broadcasts: {}× fewer than "
                     "dense ({} MB)",
                     shown(ratio, "{:.1f}"), shown(s.downlink_dense_bytes / 1e6, "{:.2f}"))});
  }
  // The evaluation's other numbers, as the script named them (a language model's perplexity).
  std::size_t at = 1;
  for (const auto& [name, spread] : s.honest_metrics) {
    tiles.insert(
        tiles.begin() + std::ptrdiff_t(at++),
        {fmt::format("honest {} (mean)", name), shown(spread.mean, "{:.4g}"),
         fmt::format("min {} · max {}", shown(spread.min, "{:.4g}"), shown(spread.max, "{:.4g}"))});
  }
  std::string out = "<div class='tiles'>\n";
  for (const Tile& t : tiles) {
    out += fmt::format(
        "<div class='tile{}'><div class='tile-label'>{}</div><div class='tile-value'>{}</div>"
        "<div class='tile-detail'>{}</div></div>\n",
        t.alarm ? " alarm" : "", escapeHtml(t.label), escapeHtml(t.value), t.detail);
  }
  return out + "</div>\n";
}

std::string writeRunResults(const std::filesystem::path& dir, const RunSummary& summary,
                            std::span<const MonitorSample> samples, ReportInputs inputs) {
  inputs.summary_json = summaryJson(summary);
  std::ofstream(dir / "summary.json") << inputs.summary_json << '\n';
  std::ofstream(dir / "report.html") << reportHtml(summary, samples, inputs);
  return inputs.summary_json;
}

std::string reportHtml(const RunSummary& s, std::span<const MonitorSample> samples,
                       const ReportInputs& in) {
  std::string html = fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{0}</title>
<style>
body {{ font: 14px/1.4 sans-serif; margin: 24px; color: #222; max-width: 1360px; }}
h1 {{ font-size: 22px; }} h2 {{ font-size: 17px; margin-top: 28px; }}
figure {{ display: inline-block; margin: 8px; }}
table.heat {{ border-collapse: collapse; }} .heat td, .heat th {{ border: 1px solid #ccc; padding: 3px 6px; text-align: center; font-size: 12px; }}
.heat th.byz {{ color: #b30000; }} .heat td.none {{ background: #eee; }}
pre {{ background: #f4f4f4; padding: 10px; overflow-x: auto; }}
.note {{ color: #555; font-size: 12px; }}
.tiles {{ display: flex; flex-wrap: wrap; gap: 10px; }}
.tile {{ border: 1px solid #ccc; border-radius: 6px; padding: 10px 14px; width: 220px; }}
.tile.alarm {{ border-color: #b30000; background: #fff2f2; }}
.tile-label {{ color: #555; font-size: 12px; }} .tile-value {{ font-size: 22px; font-weight: bold; }}
.tile-detail {{ color: #666; font-size: 11px; }}
</style></head><body>
<h1>{0}</h1>
)",
                                 escapeHtml(in.title));
  if (!in.command.empty())
    html += "<p><code>" + escapeHtml(withoutSecrets(in.command)) + "</code></p>\n";
  const RunSummary* baseline = in.baseline ? &*in.baseline : nullptr;
  html += "<h2>Summary</h2>\n" + summaryTiles(s, baseline);
  html += "<h2>Plots</h2>\n";
  for (const auto& chart : reportCharts(s, samples, baseline)) {
    html += "<figure>" + chart.svg + "</figure>\n";
  }
  html += "<h2>Exclusions per peer</h2>\n" + heatmap(s);
  html += "<h2>Summary as JSON</h2>\n<pre>" + escapeHtml(in.summary_json) + "</pre>\n";
  html += "<h2>Configuration</h2>\n<pre>" + escapeHtml(withoutSecrets(in.config_text)) +
          "</pre>\n</body></html>\n";
  return html;
}

}  // namespace phalanx::tools
