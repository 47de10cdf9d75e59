#include "node/round_record.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace phalanx::node {
namespace {

// The records are written by hand, not by nlohmann (which reads them): their bytes are what
// recorded runs are compared on (`tests/recorded/check`, docs/results), in one fixed layout
// (", " and ": " separators, integral numbers without ".0"), at the rate of every peer-round of a
// simulation. A non-finite number is null: JSON has no spelling for it.
std::string jsonNumber(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

std::string idList(const std::vector<std::uint32_t>& ids) {
  return fmt::format("[{}]", fmt::join(ids, ","));
}

std::vector<std::uint32_t> idsOf(const nlohmann::json& j, const char* key) {
  std::vector<std::uint32_t> out;
  if (!j.contains(key) || !j[key].is_array()) return out;
  for (const auto& v : j[key]) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() <= 0xffffffffu) {
      out.push_back(v.get<std::uint32_t>());
    }
  }
  return out;
}

double numberOr(const nlohmann::json& j, const char* key, double fallback) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

std::uint64_t countOr0(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number_unsigned() ? j[key].get<std::uint64_t>() : 0;
}

bool flag(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
}

std::optional<double> optionalNumber(const nlohmann::json& j, const char* key) {
  if (j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return std::nullopt;
}

}  // namespace

std::optional<RoundRecord> parseRoundRecord(std::string_view line) {
  const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("round") ||
      !j["round"].is_number_unsigned()) {
    return std::nullopt;
  }
  RoundRecord r;
  r.round = j["round"].get<std::uint64_t>();
  r.train_loss = numberOr(j, "train_loss", NodeMetrics::kUnknown);
  r.learning_rate = numberOr(j, "learning_rate", NodeMetrics::kUnknown);
  r.test_accuracy = optionalNumber(j, "test_accuracy");
  r.gamma = optionalNumber(j, "gamma");
  r.contraction = optionalNumber(j, "contraction");
  r.residual = optionalNumber(j, "residual");
  r.test_loss = optionalNumber(j, "test_loss");
  r.bytes_sent_total = countOr0(j, "bytes_sent_total");
  r.bytes_received_total = countOr0(j, "bytes_received_total");
  r.dense_bytes_total = countOr0(j, "dense_bytes_total");
  r.bytes_uplink_total = countOr0(j, "bytes_uplink_total");
  r.bytes_downlink_total = countOr0(j, "bytes_downlink_total");
  r.local_steps = countOr0(j, "local_steps");
  r.mixed = idsOf(j, "mixed");
  r.excluded = idsOf(j, "excluded");
  r.missing = idsOf(j, "missing");
  r.equivocators = idsOf(j, "equivocators");
  if (j.contains("attack_known") && j["attack_known"].is_number_unsigned()) {
    r.attack_known = j["attack_known"].get<std::size_t>();
    r.attack_computed = flag(j, "attack_computed");
    r.coalition_short = flag(j, "coalition_short");
  }
  r.deadline_hit = flag(j, "deadline_hit");
  r.quorum_close = flag(j, "quorum_close");
  r.round_seconds = numberOr(j, "round_seconds", 0);
  if (j.contains("test_metrics") && j["test_metrics"].is_object()) {
    for (const auto& item : j["test_metrics"].items()) {
      if (item.value().is_number()) {
        r.test_metrics.emplace_back(item.key(), item.value().get<double>());
      }
    }
  }
  return r;
}

std::string roundRecordJson(std::uint32_t node, const RoundRecord& r) {
  std::string out = fmt::format(
      "{{\"node\": {}, \"round\": {}, \"train_loss\": {}, \"learning_rate\": {}, "
      "\"bytes_sent_total\": {}, \"bytes_received_total\": {}, \"dense_bytes_total\": {}, "
      "\"mixed\": {}, \"excluded\": {}, \"missing\": {}, \"deadline_hit\": {}, \"quorum_close\": "
      "{}, "
      "\"round_seconds\": {}",
      node, r.round, jsonNumber(r.train_loss), jsonNumber(r.learning_rate), r.bytes_sent_total,
      r.bytes_received_total, r.dense_bytes_total, idList(r.mixed), idList(r.excluded),
      idList(r.missing), r.deadline_hit ? "true" : "false", r.quorum_close ? "true" : "false",
      jsonNumber(r.round_seconds));
  if (r.bytes_uplink_total > 0 || r.bytes_downlink_total > 0) {
    out += fmt::format(", \"bytes_uplink_total\": {}, \"bytes_downlink_total\": {}",
                       r.bytes_uplink_total, r.bytes_downlink_total);
  }
  if (r.local_steps > 0) out += fmt::format(", \"local_steps\": {}", r.local_steps);
  if (r.gamma) out += fmt::format(", \"gamma\": {}", jsonNumber(*r.gamma));
  if (r.contraction) out += fmt::format(", \"contraction\": {}", jsonNumber(*r.contraction));
  if (r.residual) out += fmt::format(", \"residual\": {}", jsonNumber(*r.residual));
  if (!r.equivocators.empty()) out += fmt::format(", \"equivocators\": {}", idList(r.equivocators));
  if (r.attack_known) {
    out += fmt::format(", \"attack_known\": {}, \"attack_computed\": {}", *r.attack_known,
                       r.attack_computed ? "true" : "false");
    if (r.coalition_short) out += ", \"coalition_short\": true";
  }
  if (r.test_accuracy) out += fmt::format(", \"test_accuracy\": {}", jsonNumber(*r.test_accuracy));
  if (r.test_loss) out += fmt::format(", \"test_loss\": {}", jsonNumber(*r.test_loss));
  if (!r.test_metrics.empty()) {
    out += ", \"test_metrics\": {";
    for (std::size_t i = 0; i < r.test_metrics.size(); ++i) {
      // A name is the script's: dump() quotes and escapes it (invalid UTF-8 replaced).
      const std::string name = nlohmann::json(r.test_metrics[i].first)
                                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      out += fmt::format("{}{}: {}", i > 0 ? ", " : "", name, jsonNumber(r.test_metrics[i].second));
    }
    out += "}";
  }
  return out + "}";
}

}  // namespace phalanx::node
