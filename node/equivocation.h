// Equivocation evidence (docs/PROTOCOL.md "Equivocation"): every round message carries its
// sender's signed statement "my vector for round t has digest h"; honest peers report the
// statements they heard to their neighbours, who relay them as far as another neighbour of the
// sender. Two statements signed by one sender for one round with different digests are a proof
// that any holder of the sender's certificate checks: the sender is convicted, and the proof is
// flooded once. An unsigned or unchecked report never convicts.
//
// Signatures are checked lazily: only when a round's statements disagree (an honest round's
// never do, so honest traffic costs no verification). A statement that fails its check is
// dropped — except one this node took from the sender's own message: an honest sender never
// signs wrongly, so that convicts the sender here (evidence for this node only).
// Pure bookkeeping, bounded: rounds outside a window around the node's own are ignored, and a
// round keeps at most a few statements per sender. Owned by the network thread; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "net/signing.h"

namespace phalanx::node {

using net::Digest;  // a statement's digest: net::vectorDigest of the vector

struct Statement {
  std::uint32_t sender = 0;
  std::uint64_t round = 0;
  Digest digest{};
  std::string signature;
};

// Two statements of one sender and round with different digests.
struct Proof {
  Statement a, b;
};

class EquivocationDetector {
 public:
  // `keys`: the peers' public keys this node checks signatures with (a peer without one is
  // never convicted here); `window`: rounds kept either side of the current one.
  // `domain`: the run's (net::statementBytes).
  EquivocationDetector(std::shared_ptr<const net::KeyRing> keys, std::string domain,
                       std::uint64_t window = 16)
      : keys_(std::move(keys)), domain_(std::move(domain)), window_(window) {}

  struct Outcome {
    bool fresh = false;          // a statement this node did not hold: worth relaying
    bool convicted = false;      // its sender is convicted now
    std::optional<Proof> proof;  // the transferable proof, when the conviction has one
  };
  // A statement from the sender's own message (the caller has checked that its digest is the
  // one of the vector it holds for the sender).
  Outcome own(const Statement& s);
  // A statement a neighbour reported (heard from the sender, or relayed); the first one per
  // reporter, round, sender and digest counts.
  Outcome report(std::uint32_t reporter, const Statement& s) {
    return report(reporter, s.sender, s.round, s.digest, s.signature);
  }
  // The same without a Statement: an agreeing report (the common case) allocates nothing.
  Outcome report(std::uint32_t reporter, std::uint32_t sender, std::uint64_t round,
                 const Digest& digest, std::string_view signature);
  // A proof a neighbour sent: true when it convicts its sender now (checked; one per reporter
  // and sender is looked at).
  bool proof(std::uint32_t reporter, const Proof& p);

  // Forgets rounds before current - window; later statements for them are ignored.
  void advance(std::uint64_t current);

  bool convicted(std::uint32_t peer) const { return convicted_.contains(peer); }
  const std::set<std::uint32_t>& convictedPeers() const { return convicted_; }
  // Rounds in which a sender was caught, per sender.
  const std::map<std::uint32_t, std::uint64_t>& equivocations() const { return equivocations_; }
  // The round of each sender's first conviction here.
  const std::map<std::uint32_t, std::uint64_t>& convictedAt() const { return convicted_at_; }
  std::uint64_t signaturesChecked() const { return checked_; }
  std::uint64_t signaturesRefused() const { return refused_; }

 private:
  struct Entry {
    Digest digest;
    std::string signature;
    bool firsthand;            // from the sender's own message
    std::optional<bool> good;  // unset: not checked yet
  };
  struct Slot {
    std::vector<Entry> entries;
    std::set<std::pair<std::uint32_t, Digest>> reported;  // (reporter, digest)
    bool caught = false;
  };
  static constexpr std::size_t kMaxEntries = 8;

  bool inWindow(std::uint64_t round) const;
  Outcome add(std::uint32_t sender, std::uint64_t round, Slot& slot, Entry entry);
  Outcome settle(std::uint32_t sender, std::uint64_t round, Slot& slot);
  // nullopt: no key for `sender`.
  std::optional<bool> check(std::uint32_t sender, std::uint64_t round, const Digest& digest,
                            const std::string& signature);
  void convict(std::uint32_t sender, std::uint64_t round);

  std::shared_ptr<const net::KeyRing> keys_;
  std::string domain_;
  std::uint64_t window_;
  std::uint64_t current_ = 0;
  // By round, then by sender in a hash table: every statement a peer hears looks its slot up
  // (~160 a round on a torus), and one tree over (round, sender) is ten levels of cache misses
  // in a simulation of a thousand peers; forgetting a round drops its table alone.
  Slot& slotOf(std::uint64_t round, std::uint32_t sender) { return slots_[round][sender]; }
  std::map<std::uint64_t, std::unordered_map<std::uint32_t, Slot>> slots_;
  std::set<std::pair<std::uint32_t, std::uint32_t>> proofs_seen_;  // (reporter, sender)
  std::set<std::uint32_t> convicted_;
  std::map<std::uint32_t, std::uint64_t> equivocations_;
  std::map<std::uint32_t, std::uint64_t> convicted_at_;
  std::uint64_t checked_ = 0, refused_ = 0;
};

}  // namespace phalanx::node
