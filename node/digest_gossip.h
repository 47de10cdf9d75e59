// Equivocation evidence as an honest peer gossips it (docs/PROTOCOL.md "Equivocation"): every
// vector heard must come with its sender's signed statement of its digest (else it is left out
// of the mix); the statements heard in a round go to every live neighbour, who relay them until
// they have crossed as many edges as separate two neighbours of the sender without it (so that
// on any graph some honest peer holds both sides of an equivocation); two signed, different
// statements convict the sender, and the proof is flooded once. A peer that holds no keys
// (security: none) neither checks nor reports anything: no unsigned report is evidence.
#pragma once

#include <spdlog/logger.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "net/digest_memo.h"
#include "net/proto/phalanx.pb.h"
#include "net/refusal.h"
#include "node/equivocation.h"
#include "node/exchange/round_exchange.h"
#include "node/exchange/round_wire.h"
#include "node/metrics.h"
#include "topologies/analysis.h"
#include "topologies/topology.h"

namespace phalanx::node {

class DigestGossip {
 public:
  struct Setup {
    std::uint32_t self;
    const std::vector<std::uint32_t>& neighbours;
    const topologies::Topology& topology;
    std::shared_ptr<const net::KeyRing> keys;  // null: this peer holds none (nothing is signed)
    std::string domain;                        // the run's (net::statementBytes)
    bool exclude;                              // mixing.exclude_equivocators
    net::DigestMemo* memo = nullptr;           // shared digests (the simulation); null: none
    // Shared reach by sender (the simulation: one table for every peer); null: its own.
    std::shared_ptr<const topologies::DetourLengths> detours = nullptr;
  };
  DigestGossip(Setup setup, RoundWire& wire, NodeMetrics& metrics,
               std::map<net::Refusal, std::uint64_t>& rejections, spdlog::logger& log)
      : self_(setup.self),
        neighbours_(setup.neighbours),
        topology_(setup.topology),
        keys_(setup.keys),
        exclude_(setup.exclude),
        memo_(setup.memo),
        wire_(wire),
        metrics_(metrics),
        rejections_(rejections),
        log_(log),
        detours_(setup.detours ? std::move(setup.detours)
                               : std::make_shared<const topologies::DetourLengths>(topology_)),
        detector_(setup.keys, setup.domain) {}

  // Whether statements are checked and reported (this peer holds keys).
  bool active() const { return keys_ != nullptr; }

  // Round t's vectors heard (`messages`: the round's messages, by sender, with their
  // statements): the ones whose statement is missing or is not of the vector held are left out
  // (and a keyframe asked for); the statements out and into the detector; returns `heard` less
  // those and the peers convicted. `open`: the round the node is in.
  std::vector<std::uint32_t> screen(std::uint64_t t, const std::vector<std::uint32_t>& heard,
                                    const net::RoundMessages& messages, RoundExchange& exchange,
                                    std::uint64_t open);
  // Message `m`, of an earlier round, moved its sender's replica to `row` outside any mix:
  // evidence all the same.
  void witness(const net::Received& m, std::span<const float> row, std::uint64_t open);
  // A neighbour's report: statements to check and relay, or a proof. Statements and proofs
  // about ids outside the topology are counted (unknown_sender) and dropped.
  void take(std::uint32_t reporter, const net::v1::RoundDigest& digest, std::uint64_t open);

  const EquivocationDetector& detector() const { return detector_; }

 private:
  void handle(const EquivocationDetector::Outcome& outcome, std::uint32_t sender,
              std::uint64_t round, std::uint64_t open);
  // To every live neighbour but `except`: one message, shared where the transport can.
  void broadcast(const std::shared_ptr<const net::v1::Envelope>& shared, std::uint32_t except);
  // Edges a statement about `sender` must cross to get from any of its neighbours to any other
  // without passing it (the topology's longest such shortest path; the node count if none).
  std::uint64_t reach(std::uint32_t sender) const { return (*detours_)(sender); }
  void logConviction(std::uint32_t peer, std::uint64_t round, std::uint64_t open, bool proven);

  std::uint32_t self_;
  const std::vector<std::uint32_t>& neighbours_;
  const topologies::Topology& topology_;
  std::shared_ptr<const net::KeyRing> keys_;
  bool exclude_;
  net::DigestMemo* memo_;
  RoundWire& wire_;
  NodeMetrics& metrics_;
  std::map<net::Refusal, std::uint64_t>& rejections_;
  spdlog::logger& log_;
  // By sender, measured when first needed (only the senders within reach come up).
  std::shared_ptr<const topologies::DetourLengths> detours_;
  EquivocationDetector detector_;
};

}  // namespace phalanx::node
