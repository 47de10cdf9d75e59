#include "tools/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace phalanx::tools {
namespace {

// Inside every SVG, so a chart saved alone looks as it does in the report.
constexpr const char* kSvgStyle =
    "text { font-family: sans-serif; } .title { font-size: 14px; font-weight: bold; } "
    ".tick { font-size: 11px; fill: #444; } .label { font-size: 12px; } "
    ".plot { fill: #fafafa; stroke: #888; } .grid { stroke: #e3e3e3; }";

constexpr int kWidth = 640, kHeight = 320, kLeft = 70, kRight = 20, kTop = 36, kBottom = 46;

std::string number(double v) {
  if (v == 0) return "0";
  const double a = std::abs(v);
  if (a >= 1e6 || a < 1e-3) return fmt::format("{:.2g}", v);
  if (a >= 100) return fmt::format("{:.0f}", v);
  return fmt::format("{:.3g}", v);
}

}  // namespace

std::string svgChart(const Chart& c) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  const auto ty = [&](double y) { return c.log_y ? std::log10(std::max(y, 1e-12)) : y; };
  for (const auto& s : c.series) {
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      x0 = std::min(x0, s.x[i]);
      x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, ty(s.y[i]));
      y1 = std::max(y1, ty(s.y[i]));
    }
  }
  std::string out = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' viewBox='0 0 {} {}' "
      "role='img' aria-label='{}'>\n<style>{}</style>\n<text x='{}' y='20' class='title'>{}</text>\n",
      kWidth, kHeight, kWidth, kHeight, escapeHtml(c.title), kSvgStyle, kLeft, escapeHtml(c.title));
  if (!std::isfinite(x0)) {
    return out + fmt::format("<text x='{}' y='{}'>no data</text></svg>\n", kLeft, kHeight / 2);
  }
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) {
    y0 -= 0.5;
    y1 += 0.5;
  }
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  const auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * pw; };
  const auto py = [&](double y) { return kTop + ph - (ty(y) - y0) / (y1 - y0) * ph; };
  out += fmt::format("<rect x='{}' y='{}' width='{}' height='{}' class='plot'/>\n", kLeft, kTop, pw, ph);
  for (int k = 0; k <= 4; ++k) {
    const double fx = x0 + (x1 - x0) * k / 4, fy = y0 + (y1 - y0) * k / 4;
    const double gx = kLeft + pw * k / 4, gy = kTop + ph - ph * k / 4;
    out += fmt::format("<line x1='{:.1f}' y1='{}' x2='{:.1f}' y2='{}' class='grid'/>", gx, kTop, gx, kTop + ph);
    out += fmt::format("<text x='{:.1f}' y='{}' class='tick' text-anchor='middle'>{}</text>\n", gx,
                       kTop + ph + 16, number(fx));
    out += fmt::format("<line x1='{}' y1='{:.1f}' x2='{}' y2='{:.1f}' class='grid'/>", kLeft, gy, kLeft + pw, gy);
    out += fmt::format("<text x='{}' y='{:.1f}' class='tick' text-anchor='end'>{}</text>\n", kLeft - 6,
                       gy + 4, number(c.log_y ? std::pow(10.0, fy) : fy));
  }
  out += fmt::format("<text x='{:.1f}' y='{}' class='label' text-anchor='middle'>{}</text>\n",
                     kLeft + pw / 2, kHeight - 8, escapeHtml(c.x_label));
  out += fmt::format("<text x='14' y='{:.1f}' class='label' text-anchor='middle' "
                     "transform='rotate(-90 14 {:.1f})'>{}</text>\n",
                     kTop + ph / 2, kTop + ph / 2, escapeHtml(c.y_label + (c.log_y ? " (log)" : "")));
  int legend = 0;
  for (const auto& s : c.series) {
    std::string points;
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      points += fmt::format("{:.1f},{:.1f} ", px(s.x[i]), py(s.y[i]));
    }
    out += fmt::format("<polyline fill='none' stroke='{}' stroke-width='2' points='{}'/>\n", s.colour, points);
    if (s.x.size() == 1) {
      out += fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='3' fill='{}'/>\n", px(s.x[0]), py(s.y[0]), s.colour);
    }
    const double lx = kLeft + 10 + 150 * legend++;
    out += fmt::format("<rect x='{:.0f}' y='{}' width='12' height='4' fill='{}'/><text x='{:.0f}' y='{}' "
                       "class='tick'>{}</text>\n",
                       lx, kTop + 8, s.colour, lx + 16, kTop + 13, escapeHtml(s.name));
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
      out += fmt::format("<td style='background:rgb(255,{},{})' title='peer {} excluded peer {} in {:.0f}% "
                         "of the rounds it mixed it'>{:.2f}</td>",
                         shade, shade, i, j, 100 * it->second, it->second);
    }
    out += "</tr>\n";
  }
  return out + "</table>\n<p class='note'>* Byzantine (known to the monitor, not to the peers). "
               "Cell: share of the rounds in which the row's rule excluded the column's vector.</p>\n";
}

}  // namespace

std::string escapeHtml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::vector<NamedChart> reportCharts(const RunSummary& s, std::span<const MonitorSample> samples) {
  const RoundSeries& r = s.series;
  const std::vector<double> rounds(r.rounds.begin(), r.rounds.end());
  Chart accuracy{.title = "Honest test accuracy", .x_label = "round", .y_label = "accuracy"};
  accuracy.series = {{"max", "#9ecae1", rounds, r.accuracy_max},
                     {"mean", "#08519c", rounds, r.accuracy_mean},
                     {"min", "#6baed6", rounds, r.accuracy_min}};
  Chart consensus{.title = "Consensus distance among honest peers", .x_label = "round",
                  .y_label = "(1/h) sum ||x_i - mean||^2", .log_y = true};
  Series c{"measured", "#a63603", {}, {}};
  for (const auto& m : samples) {
    c.x.push_back(double(m.round));
    c.y.push_back(m.consensus_distance);
  }
  consensus.series = {c};
  Chart bytes{.title = "Accuracy vs wire bytes", .x_label = "bytes sent per honest peer (MB)",
              .y_label = "mean accuracy"};
  std::vector<double> megabytes;
  for (const double b : r.wire_bytes) megabytes.push_back(b / 1e6);
  bytes.series = {{"mean accuracy", "#006d2c", megabytes, r.accuracy_mean}};
  // Per round the share is a few honest peers' verdicts: a 10-round mean reads better.
  Chart detection{.title = "Detection: honest peers excluding a Byzantine vector", .x_label = "round",
                  .y_label = "share of honest peers (10-round mean)"};
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
          {"consensus", svgChart(consensus)},
          {"accuracy-vs-bytes", svgChart(bytes)},
          {"detection", svgChart(detection)}};
}

std::string reportHtml(const RunSummary& s, std::span<const MonitorSample> samples, const ReportInputs& in) {
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
</style></head><body>
<h1>{0}</h1>
)", escapeHtml(in.title));
  if (!in.command.empty()) html += "<p><code>" + escapeHtml(in.command) + "</code></p>\n";
  html += "<h2>Summary</h2>\n<pre>" + escapeHtml(in.summary_json) + "</pre>\n";
  html += "<h2>Plots</h2>\n";
  for (const auto& chart : reportCharts(s, samples)) html += "<figure>" + chart.svg + "</figure>\n";
  html += "<h2>Exclusions per peer</h2>\n" + heatmap(s);
  html += "<h2>Configuration</h2>\n<pre>" + escapeHtml(in.config_text) + "</pre>\n</body></html>\n";
  return html;
}

}  // namespace phalanx::tools
