#include "tools/run_analysis.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base/text.h"

namespace phalanx::tools {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double numberOr(const nlohmann::json& j, const char* key, double fallback) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

nlohmann::json numberOrNull(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

}  // namespace

std::vector<PeerHistory> readRunFolder(const std::filesystem::path& dir,
                                       const std::set<std::uint32_t>& byzantine) {
  std::vector<PeerHistory> peers;
  if (!std::filesystem::is_directory(dir)) return peers;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("node-") || !name.ends_with(".jsonl")) continue;
    const auto id = std::uint32_t(std::stoul(name.substr(5)));
    peers.push_back(readPeerHistory(entry.path(), id, byzantine.contains(id)));
  }
  std::sort(peers.begin(), peers.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return peers;
}

PeerHistory readPeerHistory(const std::filesystem::path& jsonl, std::uint32_t id, bool byzantine) {
  PeerHistory h{.id = id, .byzantine = byzantine};
  std::ifstream in(jsonl);
  for (std::string line; std::getline(in, line);) {
    auto record = node::parseRoundRecord(line);
    if (!record) {
      ++h.malformed_lines;
      continue;
    }
    while (!h.rounds.empty() && h.rounds.back().round >= record->round) {
      h.rounds.pop_back();
      ++h.superseded_rounds;
    }
    h.rounds.push_back(std::move(*record));
  }
  return h;
}

Spread spreadOf(std::span<const double> values) {
  Spread s{kNaN, kNaN, kNaN};
  double sum = 0;
  std::size_t n = 0;
  for (const double v : values) {
    if (!std::isfinite(v)) continue;
    s.min = n == 0 ? v : std::min(s.min, v);
    s.max = n == 0 ? v : std::max(s.max, v);
    sum += v;
    ++n;
  }
  if (n > 0) s.mean = sum / double(n);
  return s;
}

double consensusDistance(std::span<const std::vector<float>> models) {
  const std::vector<std::span<const float>> views(models.begin(), models.end());
  return consensusDistance(views);
}

double consensusDistance(std::span<const std::span<const float>> models) {
  if (models.size() < 2) return 0;
  const std::size_t d = models[0].size();
  std::vector<double> mean(d, 0.0);
  for (const auto& x : models) {
    if (x.size() != d)
      throw std::invalid_argument("consensus distance: models of different lengths");
    for (std::size_t k = 0; k < d; ++k) mean[k] += x[k];
  }
  for (double& m : mean) m /= double(models.size());
  double total = 0;
  for (const auto& x : models) {
    for (std::size_t k = 0; k < d; ++k) total += (x[k] - mean[k]) * (x[k] - mean[k]);
  }
  return total / double(models.size());
}

RunSummary summarize(std::span<const PeerHistory> peers, std::span<const MonitorSample> samples,
                     std::vector<std::uint32_t> crashed) {
  RunSummary s;
  s.crashed = std::move(crashed);
  std::sort(s.crashed.begin(), s.crashed.end());
  std::vector<std::uint32_t> byzantine;
  for (const auto& p : peers) {
    if (p.byzantine) byzantine.push_back(p.id);
  }
  s.byzantine = byzantine;

  // Final accuracy: each honest peer's last evaluation.
  std::vector<double> finals;
  double dense = 0, sent = 0, seconds = 0, round_count = 0;
  double uplink = 0, downlink = 0, downlink_dense = 0;
  std::vector<double> round_times;
  std::uint64_t byz_mixed = 0, byz_kept = 0, detect_rounds = 0, detected = 0;
  std::uint64_t honest_mixed = 0, honest_out = 0;
  std::map<std::uint64_t, std::vector<double>> accuracy_by_round, bytes_by_round, time_by_round;
  std::map<std::uint64_t, std::uint64_t> steps_by_round;
  std::map<std::uint64_t, std::pair<int, int>> detection_by_round;  // detected, mixing one
  std::map<std::string, std::vector<double>> metric_finals;
  for (const auto& p : peers) {
    if (p.byzantine) continue;
    std::optional<double> last;
    std::map<std::string, double> last_metrics;
    std::map<std::uint32_t, std::pair<double, double>> heard;  // peer -> excluded, mixed
    double clock = 0;                                          // this peer's summed round times
    for (const node::RoundRecord& r : p.rounds) {
      clock += r.round_seconds;
      if (r.test_loss) last_metrics["test_loss"] = *r.test_loss;
      for (const auto& [name, value] : r.test_metrics) last_metrics[name] = value;
      if (r.test_accuracy) {
        last = r.test_accuracy;
        accuracy_by_round[r.round].push_back(*r.test_accuracy);
        bytes_by_round[r.round].push_back(double(r.bytes_sent_total));
        time_by_round[r.round].push_back(clock);
        if (r.local_steps > 0) steps_by_round[r.round] = r.local_steps;
      }
      seconds += r.round_seconds;
      round_count += 1;
      round_times.push_back(r.round_seconds);
      s.rounds = std::max(s.rounds, r.round + 1);
      int mixed_here = 0, excluded_here = 0;
      for (const std::uint32_t j : r.mixed) {
        const bool out = base::containsId(r.excluded, j);
        heard[j].second += 1;
        heard[j].first += out ? 1 : 0;
        if (!base::containsId(byzantine, j)) {
          ++honest_mixed;
          honest_out += out;
          continue;
        }
        ++mixed_here;
        excluded_here += out;
      }
      // A convicted equivocator left out of the mix is detected too (docs/PROTOCOL.md).
      for (const std::uint32_t j : r.equivocators) {
        if (!base::containsId(byzantine, j) || base::containsId(r.mixed, j)) continue;
        ++mixed_here;
        ++excluded_here;
      }
      byz_mixed += std::uint64_t(mixed_here);
      byz_kept += std::uint64_t(mixed_here - excluded_here);
      if (mixed_here > 0) {
        ++detect_rounds;
        detected += excluded_here > 0;
        auto& d = detection_by_round[r.round];
        d.first += excluded_here > 0;
        d.second += 1;
      }
    }
    if (!p.rounds.empty()) {
      dense += double(p.rounds.back().dense_bytes_total);
      sent += double(p.rounds.back().bytes_sent_total);
      const node::RoundRecord& r = p.rounds.back();
      uplink += double(r.bytes_uplink_total);
      downlink += double(r.bytes_downlink_total);
      if (r.bytes_downlink_total > 0) downlink_dense += double(r.dense_bytes_total);
    }
    // A crashed peer's last evaluation is stale: the run's accuracy is the survivors'.
    if (std::find(s.crashed.begin(), s.crashed.end(), p.id) == s.crashed.end()) {
      if (last) finals.push_back(*last);
      for (const auto& [name, value] : last_metrics) metric_finals[name].push_back(value);
    }
    for (const auto& [j, counts] : heard) s.exclusion_share[p.id][j] = counts.first / counts.second;
  }
  if (finals.empty()) {
    s.honest_accuracy_mean = s.honest_accuracy_min = s.honest_accuracy_max = kNaN;
  } else {
    s.honest_accuracy_min = *std::min_element(finals.begin(), finals.end());
    s.honest_accuracy_max = *std::max_element(finals.begin(), finals.end());
    double sum = 0;
    for (const double a : finals) sum += a;
    s.honest_accuracy_mean = sum / double(finals.size());
  }
  for (const auto& [name, values] : metric_finals) s.honest_metrics[name] = spreadOf(values);
  s.byzantine_leakage = byz_mixed > 0 ? double(byz_kept) / double(byz_mixed) : kNaN;
  s.detection_rate = detect_rounds > 0 ? double(detected) / double(detect_rounds) : kNaN;
  s.honest_excluded = honest_mixed > 0 ? double(honest_out) / double(honest_mixed) : kNaN;
  s.compression_ratio = sent > 0 ? dense / sent : kNaN;
  const bool hub = uplink > 0 || downlink > 0;
  s.uplink_bytes = hub ? uplink : kNaN;
  s.downlink_bytes = hub ? downlink : kNaN;
  s.downlink_dense_bytes = hub ? downlink_dense : kNaN;
  s.round_seconds_mean = round_count > 0 ? seconds / round_count : kNaN;
  std::sort(round_times.begin(), round_times.end());
  const auto rank = [&round_times](double q) {
    if (round_times.empty()) return kNaN;
    const auto k = std::size_t(std::ceil(q * double(round_times.size())));
    return round_times[std::clamp<std::size_t>(k, 1, round_times.size()) - 1];
  };
  s.round_seconds_p50 = rank(0.5);
  s.round_seconds_p99 = rank(0.99);
  s.round_seconds_max = rank(1.0);
  s.consensus_distance = kNaN;
  for (const auto& m : samples) {
    if (std::isfinite(m.consensus_distance)) s.consensus_distance = m.consensus_distance;
  }

  for (const auto& [round, values] : accuracy_by_round) {
    s.series.rounds.push_back(round);
    s.series.accuracy_min.push_back(*std::min_element(values.begin(), values.end()));
    s.series.accuracy_max.push_back(*std::max_element(values.begin(), values.end()));
    double sum = 0;
    for (const double v : values) sum += v;
    s.series.accuracy_mean.push_back(sum / double(values.size()));
    const auto& b = bytes_by_round[round];
    double bytes = 0;
    for (const double v : b) bytes += v;
    s.series.wire_bytes.push_back(bytes / double(b.size()));
    double clock = 0;
    for (const double v : time_by_round[round]) clock += v;
    s.series.seconds.push_back(clock / double(time_by_round[round].size()));
  }
  if (steps_by_round.size() == s.series.rounds.size()) {
    for (const auto round : s.series.rounds) s.series.local_steps.push_back(steps_by_round[round]);
  }
  for (const auto& [round, d] : detection_by_round) {
    s.series.detection_rounds.push_back(round);
    s.series.detection.push_back(double(d.first) / double(d.second));
  }
  return s;
}

std::string summaryJson(const RunSummary& s) {
  nlohmann::ordered_json j;
  j["honest_accuracy_mean"] = numberOrNull(s.honest_accuracy_mean);
  j["honest_accuracy_min"] = numberOrNull(s.honest_accuracy_min);
  j["honest_accuracy_max"] = numberOrNull(s.honest_accuracy_max);
  j["consensus_distance"] = numberOrNull(s.consensus_distance);
  j["byzantine_leakage"] = numberOrNull(s.byzantine_leakage);
  j["detection_rate"] = numberOrNull(s.detection_rate);
  j["honest_excluded"] = numberOrNull(s.honest_excluded);
  j["compression_ratio"] = numberOrNull(s.compression_ratio);
  j["round_seconds_mean"] = numberOrNull(s.round_seconds_mean);
  j["round_seconds_p50"] = numberOrNull(s.round_seconds_p50);
  j["round_seconds_p99"] = numberOrNull(s.round_seconds_p99);
  j["round_seconds_max"] = numberOrNull(s.round_seconds_max);
  j["uplink_bytes"] = numberOrNull(s.uplink_bytes);
  j["downlink_bytes"] = numberOrNull(s.downlink_bytes);
  j["downlink_dense_bytes"] = numberOrNull(s.downlink_dense_bytes);
  j["rounds"] = s.rounds;
  j["crashed"] = s.crashed;
  j["diverged"] = s.diverged;
  j["byzantine"] = s.byzantine;
  if (!s.honest_metrics.empty()) {
    auto& metrics = j["honest_metrics"];
    for (const auto& [name, spread] : s.honest_metrics) {
      metrics[name] = {{"min", numberOrNull(spread.min)},
                       {"mean", numberOrNull(spread.mean)},
                       {"max", numberOrNull(spread.max)}};
    }
  }
  return j.dump(2);
}

std::optional<RunSummary> summaryFromJson(const std::string& json) {
  const auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("honest_accuracy_mean")) {
    return std::nullopt;
  }
  const auto ids = [&j](const char* key) {
    std::vector<std::uint32_t> out;
    if (!j.contains(key) || !j[key].is_array()) return out;
    for (const auto& v : j[key]) {
      if (v.is_number_unsigned() && v.get<std::uint64_t>() <= 0xffffffffu)
        out.push_back(v.get<std::uint32_t>());
    }
    return out;
  };
  RunSummary s;
  s.honest_accuracy_mean = numberOr(j, "honest_accuracy_mean", kNaN);
  s.honest_accuracy_min = numberOr(j, "honest_accuracy_min", kNaN);
  s.honest_accuracy_max = numberOr(j, "honest_accuracy_max", kNaN);
  s.consensus_distance = numberOr(j, "consensus_distance", kNaN);
  s.byzantine_leakage = numberOr(j, "byzantine_leakage", kNaN);
  s.detection_rate = numberOr(j, "detection_rate", kNaN);
  s.honest_excluded = numberOr(j, "honest_excluded", kNaN);
  s.compression_ratio = numberOr(j, "compression_ratio", kNaN);
  s.round_seconds_mean = numberOr(j, "round_seconds_mean", kNaN);
  s.round_seconds_p50 = numberOr(j, "round_seconds_p50", kNaN);
  s.round_seconds_p99 = numberOr(j, "round_seconds_p99", kNaN);
  s.round_seconds_max = numberOr(j, "round_seconds_max", kNaN);
  s.uplink_bytes = numberOr(j, "uplink_bytes", kNaN);
  s.downlink_bytes = numberOr(j, "downlink_bytes", kNaN);
  s.downlink_dense_bytes = numberOr(j, "downlink_dense_bytes", kNaN);
  s.rounds = j.contains("rounds") && j["rounds"].is_number_unsigned()
                 ? j["rounds"].get<std::uint64_t>()
                 : 0;
  s.crashed = ids("crashed");
  s.diverged = ids("diverged");
  s.byzantine = ids("byzantine");
  if (j.contains("honest_metrics") && j["honest_metrics"].is_object()) {
    for (const auto& item : j["honest_metrics"].items()) {
      if (!item.value().is_object()) continue;
      s.honest_metrics[item.key()] = {numberOr(item.value(), "min", kNaN),
                                      numberOr(item.value(), "mean", kNaN),
                                      numberOr(item.value(), "max", kNaN)};
    }
  }
  return s;
}

std::optional<RunSummary> readSummary(const std::filesystem::path& dir) {
  std::ifstream in(dir / "summary.json");
  if (!in) return std::nullopt;
  return summaryFromJson(std::string(std::istreambuf_iterator<char>(in), {}));
}

std::string monitorSampleJson(const MonitorSample& s) {
  nlohmann::ordered_json j;
  j["seconds"] = s.seconds;
  j["round"] = s.round;
  if (s.local_steps > 0) j["local_steps"] = s.local_steps;
  j["consensus_distance"] = numberOrNull(s.consensus_distance);
  j["accuracy_min"] = numberOrNull(s.accuracy_min);
  j["accuracy_mean"] = numberOrNull(s.accuracy_mean);
  j["accuracy_max"] = numberOrNull(s.accuracy_max);
  return j.dump();
}

std::vector<MonitorSample> readMonitorSamples(const std::filesystem::path& jsonl) {
  std::vector<MonitorSample> out;
  std::ifstream in(jsonl);
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    out.push_back({.seconds = numberOr(j, "seconds", 0),
                   .round = std::uint64_t(numberOr(j, "round", 0)),
                   .local_steps = std::uint64_t(std::max(0.0, numberOr(j, "local_steps", 0))),
                   .consensus_distance = numberOr(j, "consensus_distance", kNaN),
                   .accuracy_min = numberOr(j, "accuracy_min", kNaN),
                   .accuracy_mean = numberOr(j, "accuracy_mean", kNaN),
                   .accuracy_max = numberOr(j, "accuracy_max", kNaN)});
  }
  return out;
}

std::set<std::uint32_t> parseIdList(const std::string& text) {
  const auto ids = base::parseIds(text);
  if (!ids) throw std::invalid_argument(ids.error());
  return {ids->begin(), ids->end()};
}

std::string versusDense(double ratio) {
  if (!std::isfinite(ratio) || ratio <= 0) return "-";
  if (ratio >= 1.1) return fmt::format("{:.1f}x fewer", ratio);
  if (ratio >= 1) return fmt::format("{:.1f} % fewer", 100 * (1 - 1 / ratio));
  return fmt::format("{:.1f} % more", 100 * (1 / ratio - 1));
}

}  // namespace phalanx::tools
