// Why a node dropped what a peer sent: one table of the labels of messages_rejected_total
// (docs/REFERENCE.md "Metrics"), whichever layer refused — the frame codec, the handshake, the
// link, the round inbox, the node. Every layer counts through it: labels cannot drift apart.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/names.h"
#include "net/frame.h"
#include "net/inbox.h"
#include "net/proto/phalanx.pb.h"

namespace phalanx::net {

enum class Refusal : std::uint8_t {
  // A frame that breaks the format (net/FORMAT.md "Checks").
  kEmpty,
  kOversized,
  kMalformed,
  kNoBody,
  kInvalid,
  // The handshake: no Hello first, none in time, TLS failed, or the peer's Hello refused (the
  // Goodbye reason sent back).
  kExpectedHello,
  kHandshakeTimeout,
  kTlsHandshake,
  kLeaving,
  kWrongCluster,
  kWrongVersion,
  kWrongDimension,
  kWrongDigest,
  kUnknownNode,
  kDuplicateConnection,
  kProtocolError,
  kIdentityMismatch,
  // An open link: a second Hello or an envelope of no known kind, a round message in another
  // sender's name or on a connection that does not speak for the pair, too many unidentified
  // connections.
  kUnexpectedHello,
  kUnexpectedEnvelope,
  kSenderMismatch,
  kNotPairConnection,
  kTooManyPending,
  kPendingEvicted,
  // The round inbox (net/inbox.h).
  kEquivocation,
  kStale,
  kTooFarAhead,
  kUnknownSender,
  // The node, after the transport (node/peer_node.h): a message of a kind its exchange does not
  // use, a payload its decoder refuses, a replica's out-of-order sequence, a coalition frame
  // from a non-fellow, a resync request beyond one per round; and a delta for a round that
  // closed without it (applied to the replica, in no mix).
  kUnexpectedKind,
  kInvalidPayload,
  kStaleSequence,
  kCoalition,
  kResyncThrottled,
  kMissedRound,
  // A vector without its sender's signed statement where peers sign (docs/PROTOCOL.md
  // "Equivocation"), or with one that is not of the vector held (left out of the mix).
  kUnsigned,
  kStatementMismatch,
};

inline constexpr auto kRefusals =
    base::nameTable<Refusal>({{Refusal::kEmpty, "empty"},
                              {Refusal::kOversized, "oversized"},
                              {Refusal::kMalformed, "malformed"},
                              {Refusal::kNoBody, "no_body"},
                              {Refusal::kInvalid, "invalid"},
                              {Refusal::kExpectedHello, "expected_hello"},
                              {Refusal::kHandshakeTimeout, "handshake_timeout"},
                              {Refusal::kTlsHandshake, "tls_handshake"},
                              {Refusal::kLeaving, "leaving"},
                              {Refusal::kWrongCluster, "wrong_cluster"},
                              {Refusal::kWrongVersion, "wrong_version"},
                              {Refusal::kWrongDimension, "wrong_dimension"},
                              {Refusal::kWrongDigest, "wrong_digest"},
                              {Refusal::kUnknownNode, "unknown_node"},
                              {Refusal::kDuplicateConnection, "duplicate_connection"},
                              {Refusal::kProtocolError, "protocol_error"},
                              {Refusal::kIdentityMismatch, "identity_mismatch"},
                              {Refusal::kUnexpectedHello, "unexpected_hello"},
                              {Refusal::kUnexpectedEnvelope, "unexpected_envelope"},
                              {Refusal::kSenderMismatch, "sender_mismatch"},
                              {Refusal::kNotPairConnection, "not_pair_connection"},
                              {Refusal::kTooManyPending, "too_many_pending"},
                              {Refusal::kPendingEvicted, "pending_evicted"},
                              {Refusal::kEquivocation, "equivocation"},
                              {Refusal::kStale, "stale"},
                              {Refusal::kTooFarAhead, "too_far_ahead"},
                              {Refusal::kUnknownSender, "unknown_sender"},
                              {Refusal::kUnexpectedKind, "unexpected_kind"},
                              {Refusal::kInvalidPayload, "invalid_payload"},
                              {Refusal::kStaleSequence, "stale_sequence"},
                              {Refusal::kCoalition, "coalition"},
                              {Refusal::kResyncThrottled, "resync_throttled"},
                              {Refusal::kMissedRound, "missed_round"},
                              {Refusal::kUnsigned, "unsigned"},
                              {Refusal::kStatementMismatch, "statement_mismatch"}});

Refusal refusalOf(FrameError e);
// A Goodbye's reason; an unknown or unspecified one is a protocol error.
Refusal refusalOf(v1::Goodbye::Reason r);
// nullopt for what the inbox takes or harmlessly ignores (accepted, duplicate).
std::optional<Refusal> refusalOf(Admission a);

inline std::string_view refusalName(FrameError e) { return kRefusals.name(refusalOf(e)); }
inline std::string_view refusalName(v1::Goodbye::Reason r) { return kRefusals.name(refusalOf(r)); }

}  // namespace phalanx::net
