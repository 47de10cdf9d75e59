#include "node/round_record.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "node/json.h"

namespace phalanx::node {
namespace {

std::string idList(const std::vector<std::uint32_t>& ids) {
  return fmt::format("[{}]", fmt::join(ids, ","));
}

}  // namespace

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
  if (!r.equivocators.empty()) out += fmt::format(", \"equivocators\": {}", idList(r.equivocators));
  if (r.attack_known) {
    out += fmt::format(", \"attack_known\": {}, \"attack_computed\": {}", *r.attack_known,
                       r.attack_computed ? "true" : "false");
  }
  if (r.test_accuracy) out += fmt::format(", \"test_accuracy\": {}", jsonNumber(*r.test_accuracy));
  if (r.test_loss) out += fmt::format(", \"test_loss\": {}", jsonNumber(*r.test_loss));
  return out + "}";
}

}  // namespace phalanx::node
