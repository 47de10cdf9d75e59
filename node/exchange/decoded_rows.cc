#include "node/exchange/decoded_rows.h"

#include "compress/decode.h"

namespace phalanx::node {

std::vector<std::uint32_t> DecodedRows::receive(net::RoundResult& result) {
  std::vector<std::uint32_t> heard;
  for (auto& [sender, m] : result.messages) {
    if (m.kind() != net::v1::RoundMessage::GRADIENT) {
      ++context_.rejections[net::Refusal::kUnexpectedKind];
      continue;
    }
    std::vector<float>& row = rows_[sender];
    row.resize(dim_);
    const auto& payload = m.payload();
    if (auto ok = compress::decode(payload, row); !ok) {
      ++context_.rejections[net::Refusal::kInvalidPayload];
      context_.log.warn("round {}: peer {}: gradient rejected: {}", result.round, sender,
                        ok.error());
      continue;
    }
    heard.push_back(sender);
  }
  return heard;
}

std::span<const float> DecodedRows::rowOf(std::uint32_t peer) const {
  const auto it = rows_.find(peer);
  return it == rows_.end() ? std::span<const float>() : std::span<const float>(it->second);
}

}  // namespace phalanx::node
