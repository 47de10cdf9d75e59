// How a peer is put together before its first round (leveldb's DB::Open and SanitizeOptions keep
// DBImpl small the same way): what it is given (PeerSetup), its attack and learner, and the parts
// of its exchange mode made and checked against the topology, the learner and the attack in one
// place, beside config.cc's own rules; its transport's and round gate's configs.
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compress/accordion.h"
#include "compress/compressor.h"
#include "net/digest_memo.h"
#include "net/round_gate.h"
#include "net/signing.h"
#include "net/transport.h"
#include "node/adversary/adversary.h"
#include "node/attack_spec.h"
#include "node/config.h"
#include "node/exchange/exchange_context.h"
#include "node/exchange/gradient_feedback.h"
#include "node/exchange/hub_broadcast.h"
#include "node/exchange/outer_loop.h"
#include "node/exchange/round_exchange.h"
#include "robust/aggregator.h"
#include "topologies/analysis.h"
#include "topologies/topology.h"
#include "train/dataset.h"
#include "train/learner.h"
#include "train/partition.h"

namespace phalanx::node {

struct PeerSetup {
  Config config;
  std::shared_ptr<const topologies::Topology> topology;  // required
  std::uint32_t id = 0;
  std::string listen_host = "127.0.0.1";
  std::optional<std::uint16_t> listen_port;  // default: the topology's; 0: any free port (tests)
  train::Dataset shard;                      // this node's training data (for its LocalTrainer)
  // Every peer's number of training samples, by topology index: EF21-W's data weights
  // (compression.weights: data) need them; empty otherwise.
  std::vector<std::size_t> shard_sizes;
  // Null: a LocalTrainer on `shard`. Otherwise the model's owner (an external training loop:
  // train/external_learner.h); `shard` is then unused.
  std::shared_ptr<train::Learner> learner;
  std::shared_ptr<const train::Dataset> test;  // evaluation set; null: no evaluation
  // Unset: the config's `byzantine` entry for this id, if any, else honest. Wire-level
  // misbehaviour sends `garbage` (random bytes as a delta), `wrong_dim` (a keyframe of the
  // wrong length) or `replay` (its first keyframe again every round, with its old sequence).
  std::optional<AttackSpec> attack;
  std::uint64_t rounds = 0;                       // 0: config.rounds.count
  std::filesystem::path checkpoint_dir;           // empty: no checkpoints
  bool resume = false;                            // start from the newest usable checkpoint
  std::chrono::milliseconds join_timeout{30000};  // round 0 waits this long for every neighbour
  // Virtual time only (node/simulation.h): how long each local step's computation takes before
  // the round's message leaves (a round of exchange: outer takes H of them; in real time the
  // computation takes what it takes).
  std::chrono::microseconds compute_time{0};
  std::shared_ptr<spdlog::logger> log;  // null: spdlog's default
  // Round statements (docs/PROTOCOL.md "Equivocation"): this peer's key, and the public keys it
  // checks its peers' statements with. Null key: nothing is signed or checked (security: none).
  std::shared_ptr<const net::SigningKey> signing_key;
  std::shared_ptr<const net::KeyRing> keys;
  // Statement digests shared by every peer of this process (the simulation: net/digest_memo.h);
  // null: each peer hashes what it checks.
  std::shared_ptr<net::DigestMemo> digest_memo;
  // Each sender's statement reach, shared the same way (null: the peer measures its own).
  std::shared_ptr<const topologies::DetourLengths> detours;
  // The ids the run declares Byzantine (simulate's --byzantine; the config's `byzantine` entries
  // count too): the experimenter's knowledge, used only where a setting asks for it
  // (mixing.step: auto), never by the protocol.
  std::set<std::uint32_t> byzantine;
};

// `ids` (setup.byzantine, or a simulation's attackers) and the config's `byzantine` entries:
// the Byzantine ids the run declares.
std::set<std::uint32_t> declaredByzantine(std::set<std::uint32_t> ids, const Config& config);
inline std::set<std::uint32_t> declaredByzantine(const PeerSetup& setup) {
  return declaredByzantine(setup.byzantine, setup.config);
}

// `config` with mixing.step: auto replaced by its value on `topology` with `byzantine` (the
// declared ids: declaredByzantine, or the simulation's) left out of the honest graph.
Config withResolvedStep(Config config, const topologies::Topology& topology,
                        const std::set<std::uint32_t>& byzantine);

// A run's training data as its peers share it out (the daemon loads it for its one peer, the
// simulation once for all of them): the data set the config names, its split among the peers
// (made once: a Dirichlet split of Fashion-MNIST costs ~2 ms, two seconds at 1,000 peers if each
// made its own), and every shard's size where EF21-W's data weights need them.
struct RunData {
  train::TrainTest data;
  train::Partition parts;                // by topology index, as config.data and config.seed say
  std::vector<std::size_t> shard_sizes;  // empty unless compression.weights is data
};
RunData loadRunData(const Config& config, std::size_t peers);
// Peer `index`'s shard and the shard sizes, into `setup` (whose config must split the data as
// the one `run` was loaded with).
void giveShard(PeerSetup& setup, const RunData& run, std::size_t index);

// The setup's attack, else the config's entry for this id, else honest ("none" in the config:
// a peer named Byzantine that starts out honest until the control endpoint switches it).
AttackSpec attackFor(const PeerSetup& setup);
// The setup's learner, or a LocalTrainer on its shard (moved out of the setup); a label-flipping
// attacker trains on y -> classes-1-y. Throws ConfigError for what an external learner cannot
// do (Accordion, label flipping).
std::shared_ptr<train::Learner> learnerFor(PeerSetup& setup, const AttackSpec& attack);
// The setup's neighbours; ConfigError when there is no topology or the id is not in it.
std::vector<std::uint32_t> neighboursOf(const PeerSetup& setup);

// The adversary of a peer that starts Byzantine (null when it starts honest): it knows the
// config's Byzantine peers and itself. Throws ConfigError where its attack cannot run here.
std::unique_ptr<Adversary> adversaryFor(const PeerSetup& setup, AdversaryHost& host);
// The adversary of an honest peer switched at run time (`inject attack`), still honest: it knows
// the config's Byzantine peers, not itself (nobody counted it among them).
std::unique_ptr<Adversary> turnedByzantine(const PeerSetup& setup, AdversaryHost& host);

// What the exchange mode is made of (config.exchange, compression.*, outer.*): the codec (and
// Accordion's controller over it), the gradient exchange, DIANA's shift step, EF21-W's scales,
// the outer loop, the hub and its downlink.
struct ExchangeParts {
  std::unique_ptr<compress::Compressor> codec;  // null: uncompressed (or owned by `gradient`)
  std::unique_ptr<compress::AccordionController> accordion;
  compress::AdaptiveCompressor* adaptive = nullptr;  // owned by codec or by gradient
  std::uint64_t accordion_window = 1;
  std::unique_ptr<GradientFeedback> gradient;  // exchange: gradient and hub
  float shift_step = 1.0f;                     // DIANA's alpha
  // EF21-W: this node publishes its vector times own_scale = 1/(n·w_self); a receiver reads
  // n·w_j times peer j's replica (unscale, by peer; empty in every other mode).
  float own_scale = 1.0f;
  std::map<std::uint32_t, float> unscale;
  std::unique_ptr<OuterLoop> outer;         // exchange: outer
  std::optional<std::uint32_t> hub;         // exchange: hub — the star's centre
  std::unique_ptr<HubBroadcast> broadcast;  // the hub's downlink (at the hub only)
};
// Throws ConfigError naming the field for a combination that cannot run here.
ExchangeParts buildExchange(const PeerSetup& setup, const train::Learner& learner,
                            spdlog::logger& log);
// The exchange mode the parts make: one line per mode (node/exchange/round_exchange.h).
std::unique_ptr<RoundExchange> makeExchange(ExchangeParts parts, ExchangeContext context);

// Its robust rule (mixing.*, with this peer's own overrides); ConfigError naming the field.
std::unique_ptr<robust::Aggregator> aggregatorFor(const PeerSetup& setup);
// The neighbours a round waits for. A Byzantine peer waits only for the honest neighbours it
// knows of (waiting for its fellow attackers, who wait for it, would cost every round a
// deadline); one started by hand knows of none: the quorum (deg - b of its neighbours) frees it
// all the same, since its b fellow attackers are not needed to make it.
std::vector<std::uint32_t> awaitedOf(const PeerSetup& setup,
                                     const std::vector<std::uint32_t>& neighbours);

// Its transport: whom it connects (`peers`), what it offers in its Hello, TLS, liveness.
net::TransportConfig transportConfig(const PeerSetup& setup, std::size_t dim,
                                     std::string config_digest, std::vector<std::uint32_t> peers);
// The TLS files of node `id` under `security` (mode tls): security.dir's (ca.pem, node-<id>.pem,
// node-<id>.key) unless ca/cert/key name others, "{id}" replaced.
net::TlsFiles certificateFiles(const SecurityConfig& security, std::uint32_t id);
// ConfigError, naming the field and the fix, when one of them is not given or does not exist.
void checkCertificates(const net::TlsFiles& files, std::uint32_t id);
// Under TLS: this peer's statement key (its certificate's key) and the public keys of every
// peer of the topology whose certificate is where the config says (checked against the CA);
// a peer whose certificate is not there is never convicted by this one (logged).
void loadStatementKeys(PeerSetup& setup);
// Its round gate: the deadline ceiling (half for a peer that starts sending Byzantine vectors),
// the quorum, the pace.
net::GateConfig gateConfig(const PeerSetup& setup, std::size_t awaited, std::uint64_t rounds);
// A leaf of exchange: hub (a star's outer peer), which waits for its hub's broadcast.
bool isLeaf(const PeerSetup& setup);

}  // namespace phalanx::node
