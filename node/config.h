// The experiment configuration (DESIGN.md "Files"): parsed from YAML, overridden field by field
// with `--set path=value`, validated with errors that name the file, the field and the allowed
// values. A Config is a plain value; build it once at start-up.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/field_log.h"
#include "compress/compressor.h"
#include "compress/feedback.h"
#include "kernels/backend.h"
#include "node/attack_spec.h"
#include "robust/aggregator.h"
#include "train/train_config.h"

namespace YAML {
class Node;
}

namespace phalanx::node {

// Bad configuration: base::ConfigError (the training library raises it too).
using base::ConfigError;

// Names exactly as ALGORITHMS.md spells them; each parsed once, here (the training side's in
// train/train_config.h).
// What peers exchange: models (gossip with CHOCO replicas), momenta/gradients (every peer
// aggregates its neighbours'), gradients through a hub (a star's centre aggregates the leaves'
// and broadcasts one update that every peer applies: node/exchange/hub_broadcast.h), or pseudo-
// gradients of H local steps (the outer loop: node/exchange/outer_loop.h).
enum class Exchange : std::uint8_t { kModel, kGradient, kHub, kOuter };
inline constexpr auto kExchanges = base::nameTable<Exchange>({{Exchange::kModel, "model"},
                                                              {Exchange::kGradient, "gradient"},
                                                              {Exchange::kHub, "hub"},
                                                              {Exchange::kOuter, "outer"}});
enum class SecurityMode : std::uint8_t { kNone, kTls };
inline constexpr auto kSecurityModes =
    base::nameTable<SecurityMode>({{SecurityMode::kNone, "none"}, {SecurityMode::kTls, "tls"}});

// The hub's broadcast of its aggregate (exchange: hub). codec none: dense, the unidirectional
// baseline; a codec: bidirectional compression, error feedback kept at the hub.
struct BroadcastConfig {
  compress::CodecId codec = compress::CodecId::kNone;
  double density = 0.01;                                            // topk, topk_sampled, randk
  compress::ValueType values = compress::ValueType::kFp32;          // sparse values (kValueTypes)
  compress::FeedbackKind feedback = compress::FeedbackKind::kEf14;  // none | ef14
};

// EF21-W's weights w_i (ALGORITHMS.md §3.2): uniform (1/n: EF21 itself) or each peer's share
// of the training samples (its shard size over all of them, as every peer's partition says).
enum class Ef21Weights : std::uint8_t { kUniform, kData };
inline constexpr auto kEf21Weights = base::nameTable<Ef21Weights>(
    {{Ef21Weights::kUniform, "uniform"}, {Ef21Weights::kData, "data"}});

struct CompressionConfig {
  compress::CodecId codec = compress::CodecId::kNone;
  double density = 0.01;                                    // topk, topk_sampled, randk
  compress::ValueType values = compress::ValueType::kFp32;  // sparse values (kValueTypes)
  int bits = 8;                                             // qsgd
  std::size_t bucket = 0;    // qsgd, sign; 0: the codec's default (qsgd 128, sign 1024)
  int rank = 2;              // powersgd
  double threshold = 0;      // threshold codec's lambda; 0 = 1/(2 sqrt(k))
  bool unbiased = true;      // randk (d/k scale), qsgd (no shrink); DIANA needs it
  bool shared_seed = false;  // randomness shared by all nodes instead of independent
  compress::FeedbackKind feedback = compress::FeedbackKind::kNone;
  double eta = 0.1;  // ef21_sgdm's momentum weight (exchange: gradient)
  double alpha = 0;  // diana's shift step; 0: 1/(ω + 1) from the codec's variance factor
  Ef21Weights weights = Ef21Weights::kUniform;  // ef21_w
  double clip_norm = 0;  // dgc: local clipping, ‖g‖ <= clip_norm / sqrt(n); 0: off
  std::uint64_t warmup_every =
      0;  // dgc: rounds per density warm-up stage; 0: one epoch of the shard
  // The consensus step γ of model gossip through CHOCO replicas (ALGORITHMS.md §3.3). nullopt:
  // auto — 1 uncompressed (exactly MoNNA), else the contraction the codec achieves on this
  // peer's own deltas, averaged over rounds (ModelExchange::consensusStep).
  std::optional<double> gamma;
  std::uint64_t keyframe_every = 100;  // 0: only on (re)connection and on request
  bool adaptive = false;               // Accordion: LOW (this density/bits/rank) or HIGH per layer
  std::uint64_t accordion_window = 0;  // rounds per Accordion window; 0: one epoch of the shard
  double accordion_eta = 0.5;          // a layer whose gradient norm changed this much is critical
  BroadcastConfig broadcast;           // exchange: hub
};

// What the outer loop mixes: the pseudo-gradients (DiLoCo's, standalone messages), or the models
// after the H steps (CHOCO replicas as in model exchange; the outer step then moves toward the
// robust mix of the models — η = 1, μ = 0 is MoNNA with H local steps per round).
enum class OuterMix : std::uint8_t { kPseudoGradients, kModels };
inline constexpr auto kOuterMixes = base::nameTable<OuterMix>(
    {{OuterMix::kPseudoGradients, "pseudo_gradients"}, {OuterMix::kModels, "models"}});

// exchange: outer (node/exchange/outer_loop.h). The defaults are DiLoCo's outer optimizer
// (Douillard et al. 2023: Nesterov momentum 0.9, outer lr 0.7, after H = 500 inner AdamW steps) on
// its pseudo-gradients, with H = 10 of our local momentum SGD. In docs/RESULTS.md's `outer` grid
// they ended below 0.5 accuracy after 60 outer steps; mix: models with lr 1 and no momentum held
// up.
struct OuterConfig {
  std::uint64_t steps = 10;  // H: local steps per round
  OuterMix mix = OuterMix::kPseudoGradients;
  double lr = 0.7;
  double momentum = 0.9;
  bool nesterov = true;
};

// The weight a peer gives a neighbour's row (ALGORITHMS.md §2): Metropolis, or the robust-gossip
// reference's convention, where an edge to a declared Byzantine peer weighs the row's largest
// honest weight (the experimenter's knowledge, for comparisons with the paper).
enum class MixingWeights : std::uint8_t { kMetropolis, kByzantineMax };
inline constexpr auto kMixingWeights = base::nameTable<MixingWeights>(
    {{MixingWeights::kMetropolis, "metropolis"}, {MixingWeights::kByzantineMax, "byzantine_max"}});

struct MixingConfig {
  robust::RuleId rule = robust::RuleId::kNna;
  std::vector<robust::PreSpec> pre;  // nnm, clip:C, arc, bucketing:S — applied in order
  double tau = 0;                    // clipping radius (cc, clipped_gossip); 0 = adaptive
  // The gossip step η of a model exchange: x ← c + η·(z − c), c the peer's own vector and z the
  // rule's output (ALGORITHMS.md §2). nullopt: auto, 1/λ_max of the honest graph's Laplacian
  // with the Metropolis weights (the ICML 2025 robust-gossip paper's setting), the honest graph
  // being the topology less the ids the run declares Byzantine (PeerSetup::byzantine).
  std::optional<double> step = 1.0;
  MixingWeights weights = MixingWeights::kMetropolis;
  int iters = 1;  // cc iterations
  // Leave peers convicted of equivocation (docs/PROTOCOL.md) out of every later mix. Off only
  // to measure a rule alone against per-target attacks (the conviction is still counted).
  bool exclude_equivocators = true;
};

// How a round closes (docs/PROTOCOL.md "Closing a round"): when every live neighbour has
// spoken; or, with `quorum`, once deg - b of the live ones have and a grace of quorum_grace
// times the time they took has passed, but not before pace_floor times the median of the
// node's recent rounds; at the latest at the deadline: median + deadline_k·MAD of when recent
// rounds' deg - b-th message came (the b latest never count), within [deadline_min_ms, deadline_ms]
// (just deadline_ms when not adaptive, and without the quorum: then every round waits for every
// live neighbour up to deadline_ms).
struct RoundsConfig {
  std::uint64_t count = 1000;
  std::uint64_t deadline_ms = 3000;  // the ceiling
  bool quorum = true;
  double quorum_grace = 0.25;
  double pace_floor = 0.9;  // a quorum-closed round lasts at least this × the median recent round
  bool adaptive_deadline = true;
  double deadline_k = 8;
  std::uint64_t deadline_min_ms = 5;
  std::uint64_t eval_every = 100;
};

struct CheckpointConfig {
  std::string dir;  // per node: DIR/node-K; empty: `phalanx node --out OUT` uses OUT/checkpoints
  std::uint64_t every = 0;
};

// How peers prove who they are (docs/PROTOCOL.md). tls, the default: mutual TLS with the
// cluster's certificates — `dir` holds what `phalanx certs` writes (ca.pem, node-<id>.pem,
// node-<id>.key), or ca/cert/key name the files ("{id}" in cert and key is the node's id); with
// none of them, `phalanx node --out OUT` reads OUT/certs, where `phalanx launch` writes them.
// none: no proof at all (an explicit opt-in; the node warns at start).
struct SecurityConfig {
  SecurityMode mode = SecurityMode::kTls;
  std::string dir, ca, cert, key;
  // Sign each round's statement with the node's key and prove equivocations (docs/PROTOCOL.md
  // "Equivocation"); false: no equivocation is ever proven (benchmarks of the cost only). Under
  // security: none nothing is signed whatever it says; the simulation signs with keys of its own.
  bool statements = true;

  // TLS with no certificate named: the run's own are used (OUT/certs, a k8s Secret).
  bool usesRunCertificates() const {
    return mode == SecurityMode::kTls && dir.empty() && ca.empty() && cert.empty() && key.empty();
  }
};

// The control endpoint (POST /control on the metrics port) through which `phalanx inject`
// changes a running node.
struct ControlConfig {
  std::string token;  // required in "Authorization: Bearer TOKEN"; empty: the endpoint is off
  // Instead of `token`: a file whose first line is the token, readable by its owner only (what
  // keeps it off command lines; `phalanx launch` writes OUT/control.token, which `phalanx node
  // --out OUT` reads when neither is set).
  std::string token_file;
  bool remote = false;  // also accept requests from other hosts (default: loopback only)
};

// The control token: control.token, else the first line of control.token_file, else "".
// ConfigError when the file cannot be read, is empty, or group or others may read it.
std::string controlToken(const ControlConfig& control);

// What an optimized attack's line search (opt_alie, opt_ipm, opt_foe) measures against a rule
// with a pivot: the first honest peer's mix, or the average of every honest peer's own mix (the
// MoNNA reference code's objective; robust/attacks.h).
enum class SearchPivots : std::uint8_t { kFirst, kEvery };
inline constexpr auto kSearchPivots = base::nameTable<SearchPivots>(
    {{SearchPivots::kFirst, "first"}, {SearchPivots::kEvery, "every"}});

struct ByzantineConfig {
  AttackSpec attack;
  double tau = 0;  // 0: the attack's default
  double sigma = 1.0;
  double eps = 1.5;
  bool collude = false;
  SearchPivots pivots = SearchPivots::kFirst;
};

struct Config;
// Whether peers exchange gradients (their own, the hub's aggregate back, or pseudo-gradients)
// rather than models.
bool exchangesGradients(const Config& c);

struct Config {
  std::uint64_t seed = 1;
  int threads = 0;                                  // 0: every core
  kernels::Device device = kernels::Device::kAuto;  // where kernels/ runs (kernels/backend.h)
  train::DataConfig data;
  train::ModelConfig model;
  train::OptimizerConfig optimizer;
  Exchange exchange = Exchange::kModel;
  OuterConfig outer;
  CompressionConfig compression;
  MixingConfig mixing;
  RoundsConfig rounds;
  CheckpointConfig checkpoint;
  SecurityConfig security;
  ControlConfig control;
  std::map<std::uint32_t, ByzantineConfig> byzantine;  // by node id
};

// The rule node `id` mixes with (mixing.*, its seed drawn from the run's): what its aggregator
// runs, and what an attacker optimizes against.
robust::AggregatorConfig ruleConfig(const Config& c, std::uint32_t id);

// What its LocalTrainer is built from: data, model, optimizer, and rounds.count (a cosine
// schedule's period).
train::TrainerConfig trainerConfig(const Config& c);

// The codec settings of `c` for compress::makeCompressor (seed and layers left to the caller).
compress::CompressorConfig compressorConfig(const CompressionConfig& c);
// The same for the hub's broadcast.
compress::CompressorConfig compressorConfig(const BroadcastConfig& c);

// A SHA-256 over the settings every peer of one run must share (what is exchanged and how
// it is read: the learner's identity — the model and the dataset's shape, or an external
// training loop — the vector's dimension, the exchange mode and its message kinds). Peers
// compare it in their Hello; a mismatch refuses the connection (WRONG_DIGEST). Settings a
// peer may choose alone (its rule, attack, rounds, deadline, lr) stay out.
std::string configDigest(const Config& c, std::string_view learner, std::size_t dimension);

// Reads `file`, applies `overrides` ("a.b.c=value", value in YAML syntax) in order, validates.
// Throws ConfigError.
Config loadConfig(const std::filesystem::path& file, std::span<const std::string> overrides = {});

// Every field the loader reads, in its order, with what it takes and its value in the config —
// the default where the config leaves it out: the resolved config (`phalanx config show`) and,
// for the YAML "" with `describe` (then also byzantine.ID.*), the reference (docs/CONFIG.md,
// node/config_reference.h). Throws ConfigError as loadConfig does.
base::FieldLog configFields(const std::string& yaml, const std::string& source,
                            std::span<const std::string> overrides = {}, bool describe = false);
base::FieldLog loadConfigFields(const std::filesystem::path& file,
                                std::span<const std::string> overrides = {});

// The same from YAML text; `source` names it in errors.
Config parseConfig(const std::string& yaml, const std::string& source,
                   std::span<const std::string> overrides = {});

}  // namespace phalanx::node
