// The run report: one self-contained HTML file (inline SVG and CSS, no scripts, nothing
// fetched): the summary as labelled figures, accuracy vs round (and a clean baseline's),
// consensus distance vs round, accuracy vs wire bytes, the detection rate vs round, a per-peer
// exclusion heatmap, the summary's JSON and the run's config.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tools/run_analysis.h"

namespace phalanx::tools {

// A line chart: series of (x, y) points (non-finite points, and y <= 0 on a log axis, skipped; a
// one-point series is a dot).
struct Series {
  std::string name;
  std::string colour;  // any SVG colour
  std::vector<double> x, y;
  bool dashed = false;  // a reference line (a clean baseline), not this run's
};
struct Chart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  bool log_y = false;
  // What the figure can be ([0, 1] for shares and accuracies): the y axis spans the data's
  // range widened to round tick values, never beyond these (0.98-0.99 accuracies get an axis
  // of their own, not a sliver under the legend of a [0, 1] one). Linear axes only: a log axis
  // spans whole decades of its data.
  std::optional<std::pair<double, double>> y_bounds;
};
// Round tick values over [lo, hi]: steps of 1, 2 or 5 times a power of ten (at least
// `min_step`: 1 for rounds), about `target` of them, the first at or below lo and the last at
// or above hi.
std::vector<double> niceTicks(double lo, double hi, int target = 5, double min_step = 0);
// A standalone SVG document: axes, round tick values, a legend, its own style.
std::string svgChart(const Chart& chart);

struct ReportInputs {
  std::string title = "phalanx run";
  std::string config_text;   // the config file as run, shown verbatim
  std::string command;       // how the run was started
  std::string summary_json;  // summaryJson() of the same summary
  // A clean run to compare with (monitor --baseline DIR): its figures beside this run's and its
  // accuracy drawn in the accuracy plot.
  std::optional<RunSummary> baseline;
};

// Each plot as a standalone SVG document (for --png, and inside the report).
struct NamedChart {
  std::string name;  // file stem: accuracy, consensus, accuracy-vs-bytes, detection
  std::string svg;
};
std::vector<NamedChart> reportCharts(const RunSummary& summary,
                                     std::span<const MonitorSample> samples,
                                     const RunSummary* baseline = nullptr);

// The figures people look at first, as labelled HTML tiles (with the baseline's beside them).
std::string summaryTiles(const RunSummary& summary, const RunSummary* baseline = nullptr);

std::string reportHtml(const RunSummary& summary, std::span<const MonitorSample> samples,
                       const ReportInputs& inputs);

// A run folder's results (launch, simulate): DIR/summary.json and DIR/report.html, with
// inputs.summary_json filled in here. Returns the summary JSON.
std::string writeRunResults(const std::filesystem::path& dir, const RunSummary& summary,
                            std::span<const MonitorSample> samples, ReportInputs inputs);

// HTML-escapes text (&, <, >, ").
std::string escapeHtml(const std::string& text);

}  // namespace phalanx::tools
