#include "tools/monitor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "node/npy.h"

// Last: it pulls in <resolv.h>, whose _res macro breaks Eigen's headers.
#include <httplib.h>

namespace phalanx::tools {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A count from a scrape: a peer may answer anything, and a double that is negative, NaN or
// beyond 2^64 has no defined conversion to an integer. Such an answer counts as 0.
std::uint64_t countFrom(double v) {
  return v >= 0 && v < 18446744073709551616.0 ? std::uint64_t(v) : 0;
}

std::string show(double v, const char* format = "{:.4f}") {
  return std::isfinite(v) ? fmt::format(fmt::runtime(format), v) : std::string("-");
}

}  // namespace

std::vector<MetricSample> parsePrometheus(const std::string& text) {
  std::vector<MetricSample> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.empty() || line[0] == '#') continue;
    MetricSample s;
    std::size_t pos = line.find_first_of("{ ");
    if (pos == std::string::npos) continue;
    s.name = line.substr(0, pos);
    if (line[pos] == '{') {
      const std::size_t close = line.find('}', pos);
      if (close == std::string::npos) continue;
      // key="value",key="value" (our exporter never escapes quotes inside values)
      std::size_t k = pos + 1;
      while (k < close) {
        const std::size_t eq = line.find('=', k);
        if (eq == std::string::npos || eq > close || line[eq + 1] != '"') break;
        const std::size_t quote = line.find('"', eq + 2);
        if (quote == std::string::npos || quote > close) break;
        s.labels[line.substr(k, eq - k)] = line.substr(eq + 2, quote - eq - 2);
        k = quote + 2;  // past `",`
      }
      pos = close + 1;
    }
    const std::string value = line.substr(std::min(pos, line.size()));
    char* parsed_end = nullptr;
    const char* begin = value.c_str();
    while (*begin == ' ') ++begin;
    s.value = std::strtod(begin, &parsed_end);
    if (parsed_end == begin) continue;
    out.push_back(std::move(s));
  }
  return out;
}

Monitor::Monitor(std::shared_ptr<const topologies::Topology> topology,
                 std::set<std::uint32_t> byzantine, std::string token)
    : topology_(std::move(topology)), byzantine_(std::move(byzantine)), token_(std::move(token)) {
  for (const auto& n : topology_->nodes()) {
    PeerView v;
    v.id = n.id;
    v.byzantine = byzantine_.contains(n.id);
    peers_.push_back(v);
  }
}

void Monitor::scrape() {
  for (PeerView& v : peers_) {
    const auto& spec = topology_->node(v.id);
    v.up = false;
    if (spec.metrics_port == 0) continue;  // the topology gives it no metrics port
    httplib::Client http(spec.host, spec.metrics_port);
    http.set_connection_timeout(std::chrono::milliseconds(300));
    http.set_read_timeout(std::chrono::seconds(2));
    const auto metrics = http.Get("/metrics");
    v.up = metrics && metrics->status == 200;
    if (!v.up) {
      v.model.reset();
      continue;
    }
    v.test_accuracy = kNaN;
    v.local_steps = 0;
    v.excluded.clear();
    v.heard.clear();
    for (const MetricSample& s : parsePrometheus(metrics->body)) {
      const auto peer = [&] {
        return std::uint32_t(std::strtoul(s.labels.at("peer").c_str(), nullptr, 10));
      };
      if (s.name == "phalanx_round")
        v.round = countFrom(s.value);
      else if (s.name == "phalanx_local_steps")
        v.local_steps = countFrom(s.value);
      else if (s.name == "phalanx_test_accuracy")
        v.test_accuracy = s.value;
      else if (s.name == "phalanx_bytes_sent_total")
        v.bytes_sent = s.value;
      else if (s.name == "phalanx_dense_bytes_total")
        v.dense_bytes = s.value;
      else if (s.name == "phalanx_round_seconds_sum")
        v.round_seconds_sum = s.value;
      else if (s.name == "phalanx_round_seconds_count")
        v.round_seconds_count = s.value;
      else if (s.name == "phalanx_peer_excluded_total" && s.labels.contains("peer"))
        v.excluded[peer()] = s.value;
      else if (s.name == "phalanx_peer_heard_total" && s.labels.contains("peer"))
        v.heard[peer()] = s.value;
    }
    v.model.reset();
    if (v.byzantine || token_.empty()) continue;
    if (const auto model = http.Get("/model", {{"Authorization", "Bearer " + token_}});
        model && model->status == 200) {
      try {
        v.model = node::parseNpy(model->body, fmt::format("GET /model of node {}", v.id)).data;
      } catch (const node::NpyError&) {
        // a peer mid-restart may answer anything: no model from it this time
      }
    }
  }
}

MonitorFigures Monitor::figures() const { return figuresOf(peers_, byzantine_); }

MonitorFigures figuresOf(std::span<const PeerView> peers,
                         const std::set<std::uint32_t>& byzantine) {
  MonitorFigures f{.accuracy_min = kNaN,
                   .accuracy_mean = kNaN,
                   .accuracy_max = kNaN,
                   .consensus_distance = kNaN,
                   .byzantine_leakage = kNaN,
                   .compression_ratio = kNaN,
                   .round_seconds = kNaN};
  std::vector<double> accuracies;
  std::vector<std::vector<float>> models;
  double dense = 0, sent = 0, seconds = 0, count = 0, kept = 0, mixed = 0;
  bool first = true;
  for (const PeerView& v : peers) {
    if (!v.up) {
      f.down.push_back(v.id);
      continue;
    }
    if (v.byzantine) continue;
    f.round_min = first ? v.round : std::min(f.round_min, v.round);
    f.round_max = std::max(f.round_max, v.round);
    f.local_steps_min = first ? v.local_steps : std::min(f.local_steps_min, v.local_steps);
    f.local_steps_max = std::max(f.local_steps_max, v.local_steps);
    first = false;
    accuracies.push_back(v.test_accuracy);
    if (v.model && (models.empty() || models[0].size() == v.model->size()))
      models.push_back(*v.model);
    dense += v.dense_bytes;
    sent += v.bytes_sent;
    seconds += v.round_seconds_sum;
    count += v.round_seconds_count;
    for (const auto& [peer, heard] : v.heard) {
      if (!byzantine.contains(peer)) continue;
      mixed += heard;
      const auto it = v.excluded.find(peer);
      kept += heard - (it == v.excluded.end() ? 0 : it->second);
    }
  }
  const Spread accuracy = spreadOf(accuracies);
  f.accuracy_min = accuracy.min;
  f.accuracy_mean = accuracy.mean;
  f.accuracy_max = accuracy.max;
  if (models.size() >= 2) f.consensus_distance = consensusDistance(models);
  if (mixed > 0) f.byzantine_leakage = kept / mixed;
  if (sent > 0) f.compression_ratio = dense / sent;
  if (count > 0) f.round_seconds = seconds / count;
  return f;
}

MonitorSample Monitor::sample(double elapsed) const {
  const MonitorFigures f = figures();
  return {.seconds = elapsed,
          .round = f.round_min,
          .local_steps = f.local_steps_min,
          .consensus_distance = f.consensus_distance,
          .accuracy_min = f.accuracy_min,
          .accuracy_mean = f.accuracy_mean,
          .accuracy_max = f.accuracy_max};
}

RunSummary summarizeLive(const MonitorFigures& f, std::span<const MonitorSample> samples,
                         std::vector<std::uint32_t> crashed, std::set<std::uint32_t> byzantine) {
  RunSummary s;
  s.honest_accuracy_min = f.accuracy_min;
  s.honest_accuracy_mean = f.accuracy_mean;
  s.honest_accuracy_max = f.accuracy_max;
  s.consensus_distance = kNaN;
  const bool outer = std::any_of(samples.begin(), samples.end(),
                                 [](const MonitorSample& m) { return m.local_steps > m.round; });
  for (const auto& m : samples) {
    if (std::isfinite(m.consensus_distance)) s.consensus_distance = m.consensus_distance;
    if (!std::isfinite(m.accuracy_mean)) continue;
    s.series.rounds.push_back(m.round);
    // Outer rounds are H local steps each: the report then plots against local steps.
    if (outer) s.series.local_steps.push_back(m.local_steps);
    s.series.accuracy_min.push_back(m.accuracy_min);
    s.series.accuracy_mean.push_back(m.accuracy_mean);
    s.series.accuracy_max.push_back(m.accuracy_max);
  }
  s.byzantine_leakage = f.byzantine_leakage;
  // Scrapes count vectors, not peer-rounds: detection_rate (honest peer-rounds that excluded a
  // Byzantine vector they mixed) is not 1 - leakage, and only the jsonl records give it.
  s.detection_rate = kNaN;
  s.honest_excluded = kNaN;
  s.compression_ratio = f.compression_ratio;
  s.round_seconds_mean = f.round_seconds;
  // The scrape has no per-round times: no percentiles from it.
  s.round_seconds_p50 = s.round_seconds_p99 = s.round_seconds_max = kNaN;
  s.rounds = f.round_max;
  s.crashed = std::move(crashed);
  s.byzantine.assign(byzantine.begin(), byzantine.end());
  return s;
}

std::string Monitor::table(double elapsed) const {
  const MonitorFigures f = figures();
  std::string down;
  for (const std::uint32_t id : f.down) down += (down.empty() ? "" : ",") + std::to_string(id);
  std::string out =
      fmt::format("phalanx monitor — {} peers ({} Byzantine: {}), {:.0f} s\n", peers_.size(),
                  byzantine_.size(), fmt::join(byzantine_, ","), elapsed);
  out += fmt::format("  {:<34}{}\n", "round (honest, slowest-fastest)",
                     fmt::format("{}-{}", f.round_min, f.round_max));
  if (f.local_steps_max > f.round_max) {  // exchange: outer
    out += fmt::format("  {:<34}{}\n", "local steps (honest, slowest-fastest)",
                       fmt::format("{}-{}", f.local_steps_min, f.local_steps_max));
  }
  out += fmt::format("  {:<34}{} / {} / {}\n", "honest accuracy min/mean/max", show(f.accuracy_min),
                     show(f.accuracy_mean), show(f.accuracy_max));
  out += fmt::format("  {:<34}{}\n", "consensus distance", show(f.consensus_distance, "{:.4g}"));
  out += fmt::format("  {:<34}{}\n", "Byzantine leakage (kept/mixed)",
                     show(f.byzantine_leakage, "{:.3f}"));
  out += fmt::format("  {:<34}{}\n", "wire bytes vs dense fp32", versusDense(f.compression_ratio));
  out += fmt::format("  {:<34}{}\n", "round time (mean)", show(f.round_seconds, "{:.3f} s"));
  out += fmt::format("  {:<34}{}\n", "dead or unreachable peers", down.empty() ? "none" : down);
  return out;
}

}  // namespace phalanx::tools
