#include "node/peer_builder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "base/text.h"
#include "net/certs.h"
#include "node/exchange/gradient_exchange.h"
#include "node/exchange/hub_exchange.h"
#include "node/exchange/model_exchange.h"
#include "node/exchange/outer_exchange.h"
#include "topologies/analysis.h"
#include "train/data_source.h"
#include "train/local_trainer.h"

namespace phalanx::node {

// The setup's attack, else the config's entry for this id, else honest ("none" in the config:
// a peer named Byzantine that starts out honest until the control endpoint switches it).
RunData loadRunData(const Config& config, std::size_t peers) {
  RunData run{.data = train::loadData(config.data, config.seed)};
  run.parts = train::partitionOf(config.data, run.data.train, peers, config.seed);
  if (config.compression.feedback == compress::FeedbackKind::kEf21W) {
    for (const auto& part : run.parts) run.shard_sizes.push_back(part.size());
  }
  return run;
}

void giveShard(PeerSetup& setup, const RunData& run, std::size_t index) {
  setup.shard = train::subset(run.data.train, run.parts.at(index));
  setup.shard_sizes = run.shard_sizes;
}

AttackSpec attackFor(const PeerSetup& s) {
  if (s.attack) return *s.attack;
  const auto it = s.config.byzantine.find(s.id);
  return it == s.config.byzantine.end() ? AttackSpec{} : it->second.attack;
}

// The setup's learner, or a LocalTrainer on its shard; a label-flipping attacker trains on
// y -> classes-1-y. A learner from outside owns its labels (it cannot flip) and hands in only
// its vector (no gradient for Accordion).
std::shared_ptr<train::Learner> learnerFor(PeerSetup& s, const AttackSpec& attack) {
  if (s.learner) {
    if (s.config.compression.adaptive) {
      throw ConfigError(
          "compression.adaptive: Accordion reads the node's own gradients; an external training "
          "loop hands in only its vector");
    }
    if (attack.kind == Misbehaviour::kLabelflip) {
      throw ConfigError(
          "byzantine: labelflip needs the node's own data (an external training loop flips its "
          "labels itself)");
    }
    return s.learner;
  }
  if (attack.kind == Misbehaviour::kLabelflip) {
    for (auto& y : s.shard.y) y = std::uint8_t(s.shard.classes - 1 - y);
  }
  auto trainer = std::make_shared<train::LocalTrainer>(trainerConfig(s.config), std::move(s.shard),
                                                       s.config.seed);
  // Only Accordion reads a model step's gradient after the step (the gradient exchanges keep
  // theirs through gradient()).
  trainer->keepStepGradient(s.config.compression.adaptive);
  return trainer;
}

std::set<std::uint32_t> declaredByzantine(std::set<std::uint32_t> ids, const Config& config) {
  for (const auto& [id, _] : config.byzantine) ids.insert(id);
  return ids;
}

Config withResolvedStep(Config config, const topologies::Topology& topology,
                        const std::set<std::uint32_t>& byzantine) {
  if (config.mixing.step) return config;
  try {
    config.mixing.step = topologies::honestGossipStep(topology, byzantine);
  } catch (const topologies::TopologyError& e) {
    throw ConfigError(e.what());
  }
  return config;
}

std::vector<std::uint32_t> neighboursOf(const PeerSetup& s) {
  if (!s.topology) throw ConfigError("node: no topology");
  if (!s.topology->contains(s.id))
    throw ConfigError(fmt::format("--id {}: no such node in the topology", s.id));
  return s.topology->neighbours(s.id);
}

namespace {
// The peers the config names Byzantine: every attacker's side knowledge.
std::set<std::uint32_t> configuredByzantine(const Config& config) {
  std::set<std::uint32_t> ids;
  for (const auto& [id, _] : config.byzantine) ids.insert(id);
  return ids;
}

// Whether the peer sends honest vectors at its start (honest, a protocol role, label flipping):
// what its gate and its awaited set are made for.
bool startsSendingHonestVectors(const PeerSetup& setup) {
  return roleOf(attackFor(setup)) == PeerRole::kHonest;
}
}  // namespace

std::unique_ptr<Adversary> adversaryFor(const PeerSetup& setup, AdversaryHost& host) {
  const AttackSpec attack = attackFor(setup);
  if (attack.honest()) return nullptr;
  std::set<std::uint32_t> byzantine = configuredByzantine(setup.config);
  byzantine.insert(setup.id);
  return std::make_unique<Adversary>(host, attack, std::move(byzantine));
}

std::unique_ptr<Adversary> turnedByzantine(const PeerSetup& setup, AdversaryHost& host) {
  return std::make_unique<Adversary>(host, AttackSpec{}, configuredByzantine(setup.config));
}

ExchangeParts buildExchange(const PeerSetup& setup, const train::Learner& learner,
                            spdlog::logger& log) {
  const Config& config = setup.config;
  const std::size_t dim = learner.dimension();
  ExchangeParts p;
  const std::vector<compress::LayerShape> layers = learner.layers();
  if (config.compression.codec != compress::CodecId::kNone &&
      config.compression.feedback != compress::FeedbackKind::kDgc) {
    compress::CompressorConfig c = compressorConfig(config.compression);
    c.seed = compress::compressionSeed(config.seed, setup.id, config.compression.shared_seed);
    c.layers = layers;
    if (config.compression.adaptive) {
      auto levels = compress::accordionLevels(c);
      if (!levels) throw ConfigError(levels.error());
      auto made = compress::AdaptiveCompressor::make(levels->first, levels->second);
      if (!made) throw ConfigError(made.error());
      p.adaptive = made->get();
      p.codec = std::move(*made);
      p.accordion = std::make_unique<compress::AccordionController>(
          layers.size(), compress::AccordionConfig{.eta = config.compression.accordion_eta});
      p.accordion_window = config.compression.accordion_window > 0
                               ? config.compression.accordion_window
                               : learner.roundsPerEpoch();
    } else {
      auto made = compress::makeCompressor(c);
      if (!made) throw ConfigError("compression: " + made.error());
      p.codec = std::move(*made);
    }
  }
  if (!exchangesGradients(config) && p.codec) {
    // The config refuses rand-k and terngrad unbiased in model gossip; QSGD's variance factor
    // depends on bits and bucket, and above 1 its replicas may drift (the grid's 4-bit runs did
    // not, with gamma 0.4): said once here.
    if (const auto omega = p.codec->varianceFactor(dim); omega && *omega > 1) {
      log.warn(
          "compression: {} has variance factor {:.2f} > 1 here, not a contraction: CHOCO replicas "
          "may drift (unbiased: false makes it one)",
          compress::codecName(config.compression.codec), *omega);
    }
  }
  if (exchangesGradients(config)) {
    // Standalone gradient messages carry their own codec; tracked ones go through the replica.
    p.gradient = std::make_unique<GradientFeedback>(
        config, dim, layers, setup.topology->size(),
        GradientFeedback::tracks(config.compression.feedback) ? nullptr : std::move(p.codec));
  }
  if (p.gradient && config.compression.feedback == compress::FeedbackKind::kDiana) {
    const auto omega = p.codec ? p.codec->varianceFactor(dim) : std::optional<double>(0.0);
    if (!omega) throw ConfigError("compression.feedback: diana needs an unbiased codec");
    p.shift_step =
        float(config.compression.alpha > 0 ? config.compression.alpha : 1.0 / (*omega + 1.0));
  }
  if (p.gradient && config.compression.feedback == compress::FeedbackKind::kEf21W) {
    // w_k: uniform, or peer k's share of the samples as the partition (known to every peer,
    // claimed by none) gives it. Published vectors are m / (n·w_self); receivers undo it.
    const auto& t = *setup.topology;
    const std::size_t n = t.size();
    std::vector<double> w(n, 1.0 / double(n));
    if (config.compression.weights == Ef21Weights::kData) {
      if (setup.shard_sizes.size() != n) {
        throw ConfigError(
            "compression.weights: data needs every peer's shard size (a node that trains on "
            "its own data; use uniform with an external training loop)");
      }
      double total = 0;
      for (const std::size_t s : setup.shard_sizes) total += double(s);
      for (std::size_t k = 0; k < n; ++k) w[k] = double(setup.shard_sizes[k]) / total;
    }
    for (std::size_t k = 0; k < n; ++k) {
      if (!(w[k] > 0)) throw ConfigError("compression.weights: a peer holds no samples");
      p.unscale[t.nodes()[k].id] = float(double(n) * w[k]);
    }
    p.own_scale = 1.0f / p.unscale.at(setup.id);
  }
  if (config.exchange == Exchange::kOuter) {
    if (setup.learner) {
      throw ConfigError(
          "exchange: outer runs the node's own local steps; an external training loop hands in "
          "one vector per round (use exchange: model or gradient)");
    }
    p.outer = std::make_unique<OuterLoop>(config.outer, dim);
  }
  if (config.exchange == Exchange::kHub) {
    p.hub = topologies::starCentre(*setup.topology);
    if (!p.hub) {
      throw ConfigError(
          "exchange: hub needs a star topology (phalanx topology gen --kind star): one centre "
          "joined to every other peer, each of them joined only to it");
    }
    if (*p.hub == setup.id) {
      // The downlink's randomness (randk, topk_sampled) is the hub's own draw stream.
      p.broadcast = std::make_unique<HubBroadcast>(
          config.compression.broadcast, dim, layers,
          compress::compressionSeed(config.seed, setup.id, false) ^ 0xb40adca57ULL);
    }
  }
  return p;
}

std::unique_ptr<RoundExchange> makeExchange(ExchangeParts parts, ExchangeContext context) {
  std::unique_ptr<AccordionStep> accordion;
  if (parts.accordion) {
    accordion = std::make_unique<AccordionStep>(std::move(parts.accordion), parts.adaptive,
                                                parts.accordion_window);
  }
  // The replica the model and the tracked gradient kinds publish through (and hear by).
  std::unique_ptr<ReplicaGossip> gossip;
  if (!parts.gradient || parts.gradient->tracked()) {
    gossip = std::make_unique<ReplicaGossip>(
        context, context.learner.dimension(), std::move(parts.codec), parts.shift_step,
        parts.unscale.empty() ? WireScaling()
                              : WireScaling(parts.own_scale, std::move(parts.unscale)));
  }
  if (parts.hub) {
    return std::make_unique<HubExchange>(context, *parts.hub, std::move(parts.gradient),
                                         std::move(gossip), std::move(accordion),
                                         std::move(parts.broadcast));
  }
  if (parts.gradient && parts.outer) {
    return std::make_unique<OuterExchange<GradientExchange>>(
        std::move(parts.outer), context, std::move(parts.gradient), std::move(gossip),
        std::move(accordion));
  }
  if (parts.gradient) {
    return std::make_unique<GradientExchange>(context, std::move(parts.gradient), std::move(gossip),
                                              std::move(accordion));
  }
  if (parts.outer) {
    return std::make_unique<OuterExchange<ModelExchange>>(std::move(parts.outer), context,
                                                          std::move(gossip), std::move(accordion));
  }
  return std::make_unique<ModelExchange>(context, std::move(gossip), std::move(accordion));
}

std::unique_ptr<robust::Aggregator> aggregatorFor(const PeerSetup& setup) {
  auto aggregator = robust::makeAggregator(ruleConfig(setup.config, setup.id));
  if (!aggregator) throw ConfigError("mixing: " + aggregator.error());
  return std::move(*aggregator);
}

std::vector<std::uint32_t> awaitedOf(const PeerSetup& setup,
                                     const std::vector<std::uint32_t>& neighbours) {
  if (startsSendingHonestVectors(setup)) return neighbours;
  std::set<std::uint32_t> byzantine = configuredByzantine(setup.config);
  std::vector<std::uint32_t> awaited;
  for (const std::uint32_t j : neighbours) {
    if (!byzantine.contains(j)) awaited.push_back(j);
  }
  return awaited;
}

net::TransportConfig transportConfig(const PeerSetup& setup, std::size_t dim,
                                     std::string config_digest, std::vector<std::uint32_t> peers) {
  const topologies::NodeSpec& self = setup.topology->node(setup.id);
  net::TransportConfig tc{.self = setup.id,
                          .model_dim = dim,
                          .config_digest = std::move(config_digest),
                          .listen_host = setup.listen_host,
                          .listen_port = setup.listen_port.value_or(self.port),
                          .neighbours = std::move(peers),
                          .seed = setup.config.seed * 7919 + setup.id};
  // A link is dead when nothing came over it for a whole deadline ceiling (at least the
  // transport's 3 s): a round with a large model moves 4 bytes per parameter per edge, and on a
  // busy machine that alone can outlast a fixed few seconds.
  tc.liveness_timeout =
      std::max(tc.liveness_timeout, std::chrono::milliseconds(setup.config.rounds.deadline_ms));
  if (setup.config.security.mode == SecurityMode::kTls)
    tc.tls = certificateFiles(setup.config.security, setup.id);
  return tc;
}

void loadStatementKeys(PeerSetup& setup) {
  const SecurityConfig& security = setup.config.security;
  const net::TlsFiles own = certificateFiles(security, setup.id);
  auto key = net::SigningKey::load(own.key);
  if (!key) throw ConfigError(fmt::format("security: statement key: {}", key.error()));
  setup.signing_key = std::make_shared<const net::SigningKey>(std::move(*key));
  auto keys = std::make_shared<net::KeyRing>();
  std::vector<std::uint32_t> missing;
  for (const auto& node : setup.topology->nodes()) {
    const net::TlsFiles files = certificateFiles(security, node.id);
    if (!std::filesystem::exists(files.cert)) {
      missing.push_back(node.id);
      continue;
    }
    auto checked = net::loadCertificateKey(files.cert, own.ca, node.id);
    if (!checked) throw ConfigError(fmt::format("security: {}", checked.error()));
    (*keys)[node.id] = std::move(*checked);
  }
  if (!missing.empty() && setup.log) {
    setup.log->warn(
        "security: no certificate for peers {} next to this node's: their statements cannot be "
        "checked here, so an equivocation by them is not proven to this node (give every node "
        "the cluster's certificates, as phalanx certs writes them)",
        fmt::join(missing, ", "));
  }
  setup.keys = std::move(keys);
}

net::TlsFiles certificateFiles(const SecurityConfig& security, std::uint32_t id) {
  const std::filesystem::path dir = security.dir;
  net::TlsFiles files{
      .enabled = true,
      .ca = security.ca.empty() && !dir.empty() ? net::caCertFile(dir).string() : security.ca,
      .cert = security.cert.empty() && !dir.empty() ? net::nodeCertFile(dir, id).string()
                                                    : base::withId(security.cert, id),
      .key = security.key.empty() && !dir.empty() ? net::nodeKeyFile(dir, id).string()
                                                  : base::withId(security.key, id)};
  return files;
}

void checkCertificates(const net::TlsFiles& files, std::uint32_t id) {
  for (const auto& [field, file] :
       {std::pair{"ca", &files.ca}, std::pair{"cert", &files.cert}, std::pair{"key", &files.key}}) {
    if (file->empty()) {
      throw ConfigError(fmt::format(
          "security.{}: security.mode is tls (the default) and no certificate is given: set "
          "security.dir to what `phalanx certs DIR --topology T.yaml` wrote (phalanx launch "
          "makes them itself), or security: {{mode: none}} to run without proof of identity "
          "(anyone who reaches a node's port can then speak for its neighbours: "
          "docs/PROTOCOL.md)",
          field));
    }
    if (!std::filesystem::exists(*file)) {
      throw ConfigError(
          fmt::format("security.{}: {} does not exist (node {}'s certificates: `phalanx certs DIR "
                      "--topology T.yaml` makes a cluster's)",
                      field, *file, id));
    }
  }
}

// How long a connection must have been a neighbour's before its round claims move this node:
// two heartbeats, and ten times the redial backoff with which a genuine neighbour takes its
// connection back from someone who named it in a Hello (security: none).
constexpr double kClaimSettleMs = 500;

bool isLeaf(const PeerSetup& setup) {
  if (setup.config.exchange != Exchange::kHub) return false;
  const auto centre = topologies::starCentre(*setup.topology);
  return centre && *centre != setup.id;
}

net::GateConfig gateConfig(const PeerSetup& setup, std::size_t awaited, std::uint64_t rounds) {
  const RoundsConfig& rc = setup.config.rounds;
  const bool leaf = isLeaf(setup);
  const bool honest = startsSendingHonestVectors(setup);
  const double ceiling_ms = double(rc.deadline_ms) * (honest ? 1.0 : 0.5);
  // The quorum: deg - b, but at least b + 1, so that it always holds an honest vector. Where
  // deg <= 2b, deg - b arrivals could all be Byzantine: b fast attackers would pace the node on
  // its own, and its honest neighbours would have to skip rounds to catch up with it.
  const std::size_t b = setup.topology->budgetOf(setup.id);
  const std::size_t deg = setup.topology->neighbours(setup.id).size();
  const std::size_t quorum = std::min(deg, std::max(deg > b ? deg - b : 0, b + 1));
  // Without the quorum the rounds are synchronous: every live neighbour, up to the ceiling. An
  // adaptive deadline there would close rounds on a loaded machine's scheduling noise, and peers
  // that must aggregate the same messages (gradient exchange) would drift apart. A leaf of
  // exchange: hub waits for its hub up to the ceiling too: a broadcast it gave up on is a step
  // every other model took and its own never will.
  return net::GateConfig{.deadline = {.fixed_ms = ceiling_ms,
                                      .adaptive = rc.quorum && rc.adaptive_deadline && !leaf,
                                      .k = rc.deadline_k,
                                      .min_ms = double(rc.deadline_min_ms)},
                         .quorum = rc.quorum ? std::min(quorum, awaited) : 0,
                         .grace_fraction = rc.quorum_grace,
                         .pace_fraction = rc.pace_floor,
                         .budget = b,
                         .claim_settle_ms = kClaimSettleMs,
                         .last_round = rounds > 0 ? rounds - 1 : 0};
}

}  // namespace phalanx::node
