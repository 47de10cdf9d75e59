// The run report: one self-contained HTML file (inline SVG and CSS, no scripts, nothing
// fetched) with accuracy vs round, consensus distance vs round, accuracy vs wire bytes, the
// detection rate vs round, a per-peer exclusion heatmap, the summary and the run's config.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "tools/run_analysis.h"

namespace phalanx::tools {

// A line chart: series of (x, y) points (non-finite points skipped; a one-point series is a dot).
struct Series {
  std::string name;
  std::string colour;  // any SVG colour
  std::vector<double> x, y;
};
struct Chart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  bool log_y = false;
};
// A standalone SVG document: axes, five ticks per axis, a legend, its own style.
std::string svgChart(const Chart& chart);

struct ReportInputs {
  std::string title = "phalanx run";
  std::string config_text;    // the config file as run, shown verbatim
  std::string command;        // how the run was started
  std::string summary_json;   // summaryJson() of the same summary
};

// Each plot as a standalone SVG document (for --png, and inside the report).
struct NamedChart {
  std::string name;  // file stem: accuracy, consensus, accuracy-vs-bytes, detection
  std::string svg;
};
std::vector<NamedChart> reportCharts(const RunSummary& summary, std::span<const MonitorSample> samples);

std::string reportHtml(const RunSummary& summary, std::span<const MonitorSample> samples,
                       const ReportInputs& inputs);

// HTML-escapes text (&, <, >, ").
std::string escapeHtml(const std::string& text);

}  // namespace phalanx::tools
