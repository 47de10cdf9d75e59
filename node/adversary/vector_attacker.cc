#include "node/adversary/vector_attacker.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "base/text.h"
#include "kernels/vector_ops.h"
#include "node/mix_weights.h"
#include "topologies/analysis.h"

namespace phalanx::node {
namespace {

// The config's other colluders that run vector attacks too (one that never shares would cost
// every round the wait), when this peer colludes.
std::vector<std::uint32_t> fellowsOf(const AdversaryHost& host) {
  const Config& config = host.config();
  const auto own = config.byzantine.find(host.self());
  std::vector<std::uint32_t> fellows;
  if (own == config.byzantine.end() || !own->second.collude) return fellows;
  for (const auto& [id, b] : config.byzantine) {
    if (b.collude && id != host.self() && host.topology().contains(id) &&
        b.attack.kind == Misbehaviour::kVector) {
      fellows.push_back(id);
    }
  }
  return fellows;
}

}  // namespace

VectorAttacker::VectorAttacker(AdversaryHost& host, const AttackSpec& spec,
                               const std::set<std::uint32_t>& byzantine, bool collude)
    : host_(host), spec_(spec), byzantine_(byzantine), coalition_timer_(host.clock().timer()) {
  // A colluding attacker pools what it hears with the config's other colluders over connections
  // of their own (the side channel: honest peers never dial them).
  if (collude) {
    if (auto fellows = fellowsOf(host); !fellows.empty())
      coalition_ = std::make_unique<CoalitionBook>(std::move(fellows), host.dimension());
  }
}

VectorAttacker::~VectorAttacker() = default;

std::expected<std::unique_ptr<robust::Attack>, std::string> VectorAttacker::makeAttack(
    const AttackSpec& spec) const {
  const Config& config = host_.config();
  const topologies::Topology& topology = host_.topology();
  const auto it = config.byzantine.find(host_.self());
  const ByzantineConfig byz = it == config.byzantine.end() ? ByzantineConfig{} : it->second;
  // Every attacker knows f and the topology from the config: ALIE's z counts f, and the opt_*
  // searches put in the mix they attack as many copies as the most attacked honest peer has
  // Byzantine neighbours (f on a complete graph; a torus peer with one takes one copy).
  // Colluding ones also draw from one random stream, so on the same honest inputs (a complete
  // graph) randomised attacks send the same vector; alone, each draws its own.
  robust::AttackConfig a{.attack = spec.vector,
                         .n = topology.size(),
                         .f = std::max<std::size_t>(1, byzantine_.size()),
                         .copies = std::max<std::size_t>(
                             1, topologies::mostByzantineNeighbours(topology, byzantine_).count),
                         .sigma = byz.sigma,
                         .eps = byz.eps,
                         .every_pivot = byz.pivots == SearchPivots::kEvery,
                         .seed = byz.collude ? config.seed * 31 + 7 : config.seed + host_.self(),
                         .target = ruleConfig(config, host_.self()),
                         .target_b = topology.defaultBudget()};
  if (byz.tau > 0) a.tau = byz.tau;
  return robust::makeAttack(a);
}

bool VectorAttacker::takeCoalition(std::uint32_t peer, const net::v1::Coalition& message) {
  if (!coalition_ || !coalition_->take(peer, message)) return false;
  recheckCoalition();
  return true;
}

void VectorAttacker::linkDown() { recheckCoalition(); }

void VectorAttacker::recheckCoalition() {
  if (!held_ || host_.finished()) return;
  HeldRound held = std::move(*held_);
  held_.reset();
  awaitCoalition(held.round, std::move(held.heard), std::move(held.record));
}

bool VectorAttacker::aheadOfHonestNeighbours(std::uint64_t t) const {
  // Released by a vector for round t, not by a heartbeat saying round t: a slow peer announces
  // its round before it sends, and an attacker let go then would time out all the same.
  const auto live = host_.livePeers();
  const net::RoundGate& gate = host_.gate();
  const auto heard = gate.inbox().heard();  // senders with a message for the open round, t
  bool any = false;
  for (const std::uint32_t j : host_.awaited()) {
    if (!base::containsId(live, j)) continue;
    if (base::containsId(heard, j) || gate.hasReached(j, t + 1)) return false;  // here, or past t
    any = true;
  }
  return any;  // none live: nobody to wait for
}

void VectorAttacker::startLeafRound(std::uint64_t t) {
  // Its honest vector as an honest leaf would send it (uncompressed): what it crafts from.
  leaf_own_ = host_.leafOwnVector(t);
  RoundRecord record;
  record.round = t;
  if (coalition_) {
    coalition_->advance(t);
    const std::uint32_t self = host_.self();
    const std::span<const float> mine = leaf_own_;
    for (const auto& e : CoalitionBook::shares(t, std::span(&self, 1), std::span(&mine, 1)))
      toFellows(e);
    coalition_wait_until_ =
        host_.clock().now() + std::chrono::milliseconds(host_.config().rounds.deadline_ms / 4);
    awaitCoalition(t, {}, std::move(record));
    return;
  }
  sendAttack(t, {}, record);
  leaf_attack_ = record;
  host_.waitForRound();
}

bool VectorAttacker::endRound(std::uint64_t t, std::vector<std::uint32_t>& heard,
                              RoundRecord& record) {
  if (host_.hubMode()) {
    // Its attack went up at the round's start; the broadcast keeps its gradients current.
    host_.applyBroadcast(t, heard, record);
    record.attack_known = leaf_attack_.attack_known;
    record.attack_computed = leaf_attack_.attack_computed;
    record.coalition_short = leaf_attack_.coalition_short;
    return false;
  }
  if (coalition_) {
    coalition_->advance(t);
    shareHeard(t, heard);
    // A quarter of the deadline ceiling for one hop among fellows: the attacker's own wait
    // for the honest vectors is capped at half of it.
    coalition_wait_until_ =
        host_.clock().now() + std::chrono::milliseconds(host_.config().rounds.deadline_ms / 4);
    awaitCoalition(t, std::move(heard), std::move(record));
    return true;
  }
  sendAttack(t, heard, record);
  return false;
}

void VectorAttacker::stop() {
  coalition_timer_->cancel();
  held_.reset();
}

std::span<const float> VectorAttacker::Knowledge::of(std::uint32_t peer) const {
  const auto it = std::find(ids.begin(), ids.end(), peer);
  return it == ids.end() ? std::span<const float>() : rows[std::size_t(it - ids.begin())];
}

VectorAttacker::Knowledge VectorAttacker::knowledge(std::uint64_t t,
                                                    const std::vector<std::uint32_t>& heard) const {
  Knowledge k;
  if (host_.hubMode()) {
    // A leaf hears no other leaf: the coalition crafts from its members' own honest vectors,
    // pooled over the side channel (the attacker of ALIE's paper, Baruch et al. 2019).
    k.ids.push_back(host_.self());
    k.rows.push_back(leaf_own_);
    if (coalition_) {
      for (const auto& [id, v] : coalition_->pooled(t)) {
        if (base::containsId(k.ids, id)) continue;
        k.ids.push_back(id);
        k.rows.push_back(v);
      }
    }
    return k;
  }
  k = heardHonest(heard);
  if (!coalition_) return k;
  for (const auto& [id, v] : coalition_->pooled(t)) {
    if (byzantine_.contains(id) || base::containsId(k.ids, id)) continue;
    k.ids.push_back(id);
    k.rows.push_back(v);
  }
  return k;
}

bool VectorAttacker::sharedAttack() const { return coalition_ && attack_ && !spec_.equivocate; }

bool VectorAttacker::leadsCoalition() const {
  return !coalition_ || coalition_->leader(host_.self(), host_.livePeers()) == host_.self();
}

VectorAttacker::Knowledge VectorAttacker::heardHonest(
    const std::vector<std::uint32_t>& heard) const {
  Knowledge k;
  for (const std::uint32_t j : heard) {
    // A fellow attacker's vector is not an honest one, whatever it claims.
    if (byzantine_.contains(j)) continue;
    if (const std::span<const float> row = host_.rowOf(j); !row.empty()) {
      k.ids.push_back(j);
      k.rows.push_back(row);
    }
  }
  return k;
}

void VectorAttacker::shareHeard(std::uint64_t t, const std::vector<std::uint32_t>& heard) {
  // The topology is the coalition's knowledge too: a fellow next to an honest peer heard that
  // peer's vector itself, so only the others travel (with every Byzantine peer next to every
  // honest one, as in gossip-sota, the shares are all markers). A vector the fellow's own link
  // lost is not made up for; the rounds the grids run lose none.
  const Knowledge own = heardHonest(heard);
  for (const std::uint32_t f : coalition_->fellows()) {
    const auto& next_to_f = host_.topology().neighbours(f);
    std::vector<std::uint32_t> ids;
    std::vector<std::span<const float>> rows;
    for (std::size_t k = 0; k < own.ids.size(); ++k) {
      if (base::containsId(next_to_f, own.ids[k])) continue;
      ids.push_back(own.ids[k]);
      rows.push_back(own.rows[k]);
    }
    for (const auto& e : CoalitionBook::shares(t, ids, rows)) host_.sendEnvelope(f, e);
  }
}

void VectorAttacker::toFellows(const net::v1::Envelope& e, std::optional<std::uint32_t> next_to) {
  for (const std::uint32_t f : coalition_->fellows()) {
    if (!next_to || base::containsId(host_.topology().neighbours(f), *next_to))
      host_.sendEnvelope(f, e);
  }
}

void VectorAttacker::awaitCoalition(std::uint64_t t, std::vector<std::uint32_t> heard,
                                    RoundRecord record) {
  bool ready = coalition_->sharesComplete(t, host_.livePeers());
  if (ready && sharedAttack() && !leadsCoalition()) {
    if (!attack_->perTarget()) {
      ready = coalition_->crafted(t) != nullptr;
    } else {  // a vector for each honest neighbour it heard
      for (const std::uint32_t j : host_.neighbours()) {
        if (!byzantine_.contains(j) && base::containsId(heard, j) && !coalition_->crafted(t, j))
          ready = false;
      }
    }
  }
  if (!ready && host_.clock().now() < coalition_wait_until_) {
    held_ = HeldRound{t, std::move(heard), std::move(record)};
    coalition_timer_->start(coalition_wait_until_ - host_.clock().now(),
                            [this] { recheckCoalition(); });
    return;
  }
  coalition_timer_->cancel();
  record.coalition_short = !ready || coalition_->sharesIn(t) < coalition_->fellows().size();
  // An inject may have switched it away from a vector attack meanwhile.
  if (spec_.kind == Misbehaviour::kVector) sendAttack(t, heard, record);
  if (host_.hubMode()) {  // a leaf's attack: sent at the round's start, the broadcast to come
    leaf_attack_ = record;
    host_.waitForRound();
    return;
  }
  host_.finishRound(t, record);
}

void VectorAttacker::sendAttack(std::uint64_t t, const std::vector<std::uint32_t>& heard,
                                RoundRecord& record) {
  const Knowledge known = knowledge(t, heard);
  const std::vector<std::span<const float>>& honest = known.rows;
  record.attack_known = honest.size();
  if (honest.empty()) return;  // nothing to build the attack from: stay silent this round
  if (attack_->perTarget()) {
    sendPerTarget(t, heard, known, record);
    return;
  }
  std::vector<float> out(host_.dimension());
  if (spec_.equivocate) {
    // Each neighbour its own vector: the attack crafted from the honest vectors known, less
    // the target's own when there are others.
    record.attack_computed = true;
    for (const std::uint32_t j : host_.neighbours()) {
      std::vector<std::span<const float>> view;
      for (std::size_t k = 0; k < known.ids.size(); ++k) {
        if (known.ids[k] != j) view.push_back(known.rows[k]);
      }
      if (view.empty()) view = honest;
      if (auto ok = attack_->craft({.honest = view}, out); !ok) meanOf(view, t, ok.error(), out);
      host_.sendWhole(j, t, host_.wirePayload(out));
    }
    return;
  }
  const auto toHonestNeighbours = [&] {
    const auto payload = host_.wirePayload(out);
    for (const std::uint32_t j : host_.neighbours()) {
      if (!byzantine_.contains(j)) host_.sendWhole(j, t, payload);
    }
  };
  // Colluding: the leader computes, the others send what it handed over (or compute
  // themselves when it did not come in time; a leader that finished still counts).
  if (const std::vector<float>* given = coalition_ ? coalition_->crafted(t) : nullptr;
      given != nullptr) {
    std::copy(given->begin(), given->end(), out.begin());
    toHonestNeighbours();
    return;
  }
  record.attack_computed = true;
  if (auto ok = attack_->craft({.honest = honest}, out); !ok) meanOf(honest, t, ok.error(), out);
  if (coalition_ && leadsCoalition()) toFellows(CoalitionBook::craftedMessage(t, out));
  toHonestNeighbours();
}

void VectorAttacker::meanOf(std::span<const std::span<const float>> vectors, std::uint64_t t,
                            const std::string& why, std::span<float> out) {
  // Too little to attack from (ALIE's spread needs two vectors; an attacker on a sparse graph
  // may hear one, and an equivocator's view of a target leaves out the target's own): send the
  // mean it knows rather than nothing, which would only cost every honest neighbour a deadline
  // per round — and an equivocator's neighbours still each get their own vector.
  if (!attack_fallback_logged_) {
    host_.log().warn(
        "round {}: attack {}: {}; sending the mean of the honest vectors known instead "
        "(logged once)",
        t, spec_.name(), why);
    attack_fallback_logged_ = true;
  }
  std::fill(out.begin(), out.end(), 0.0f);
  for (const auto& h : vectors) kernels::axpy(1.0f / float(vectors.size()), h, out);
}

void VectorAttacker::sendPerTarget(std::uint64_t t, const std::vector<std::uint32_t>& heard,
                                   const Knowledge& known, RoundRecord& record) {
  // Target j's view from everything known. Colluding, the leader crafts for every honest peer
  // next to the coalition and hands each vector to the fellows next to that peer; the others
  // send what came (crafting what did not).
  const topologies::Topology& topology = host_.topology();
  const MixingWeights scheme = host_.config().mixing.weights;
  const std::vector<std::uint32_t>& neighbours = host_.neighbours();
  std::vector<float> out(host_.dimension());
  const bool leader = leadsCoalition();
  std::set<std::uint32_t> targets;
  for (const std::uint32_t j : neighbours) {
    if (!byzantine_.contains(j) && base::containsId(heard, j)) targets.insert(j);
  }
  // (A fellow that finds itself the lowest live id after the leader left, at the end of a run,
  // does not start over what the leader already handed out.)
  if (coalition_ && leader && !coalition_->anyCrafted(t)) {
    for (const std::uint32_t f : coalition_->fellows()) {
      for (const std::uint32_t j : topology.neighbours(f)) {
        if (!byzantine_.contains(j) && !known.of(j).empty()) targets.insert(j);
      }
    }
  }
  const bool spectral = spec_.vector == robust::AttackId::kSpectral;
  if (spectral && fiedler_.empty()) {
    try {
      fiedler_ = topologies::honestFiedlerVector(topology, byzantine_);
    } catch (const topologies::TopologyError& e) {
      host_.log().warn("round {}: attack spectral: {}; staying silent", t, e.what());
      return;
    }
  }
  const auto fiedlerOf = [&](std::uint32_t k) {
    return spectral ? fiedler_[topology.indexOf(k)] : 0.0;
  };
  std::vector<double> honest_fiedler;
  for (const std::uint32_t j : known.ids) honest_fiedler.push_back(fiedlerOf(j));
  // Each target's view, in target order; the leader's vectors for the fellows are copied in.
  struct Job {
    std::uint32_t target = 0;
    const std::vector<float>* given = nullptr;
    std::vector<std::span<const float>> around;
    std::vector<double> weights;
    robust::TargetView view;
    std::vector<float> out;
    std::string error;
  };
  std::vector<Job> jobs(targets.size());
  std::size_t n = 0;
  for (const std::uint32_t j : targets) {
    Job& job = jobs[n++];
    job.target = j;
    job.given = coalition_ ? coalition_->crafted(t, j) : nullptr;
    if (job.given != nullptr) continue;
    double byzantine_weight = 0;
    std::size_t byzantine_count = 0;
    for (const std::uint32_t k : topology.neighbours(j)) {
      if (byzantine_.contains(k)) {
        byzantine_weight += mixWeight(scheme, topology, j, k, byzantine_);
        ++byzantine_count;
      } else if (const auto row = known.of(k); !row.empty()) {
        job.around.push_back(row);
        job.weights.push_back(mixWeight(scheme, topology, j, k, byzantine_));
      }
    }
    job.view = {.target = known.of(j),
                .honest_neighbours = job.around,
                .honest_weights = job.weights,
                .byzantine_weight = byzantine_weight,
                .byzantine_count = byzantine_count,
                .budget = topology.budgetOf(j),
                .fiedler = fiedlerOf(j)};
  }
  // The searches (the leader's per-target line searches dominate a spectral round): on every
  // core when the attack keeps no state between calls; each writes its own vector only, so the
  // outcome is the serial one.
  const auto craft = [&](Job& job) {
    job.out.assign(host_.dimension(), 0.0f);
    auto ok = attack_->craft(
        {.honest = known.rows, .target = &job.view, .honest_fiedler = honest_fiedler}, job.out);
    if (!ok) job.error = ok.error();
  };
  std::vector<Job*> to_craft;
  for (Job& job : jobs) {
    if (job.given == nullptr) to_craft.push_back(&job);
  }
  const std::size_t workers =
      attack_->reentrant() ? std::min<std::size_t>(
                                 to_craft.size(), std::max(1u, std::thread::hardware_concurrency()))
                           : 1;
  if (workers <= 1) {
    for (Job* job : to_craft) craft(*job);
  } else {
    std::atomic<std::size_t> next = 0;
    const auto work = [&] {
      omp_set_num_threads(1);  // the cores are taken by the searches themselves
      for (std::size_t k = next++; k < to_craft.size(); k = next++) craft(*to_craft[k]);
    };
    std::vector<std::thread> threads;
    for (std::size_t w = 1; w < workers; ++w) threads.emplace_back(work);
    const int own = omp_get_max_threads();  // this thread's setting outlives the round
    work();
    omp_set_num_threads(own);
    for (auto& thread : threads) thread.join();
  }
  // Sent in target order, as one after another would have.
  for (Job& job : jobs) {
    const bool mine = base::containsId(neighbours, job.target);
    if (job.given != nullptr) {
      std::copy(job.given->begin(), job.given->end(), out.begin());
      if (mine) host_.sendWhole(job.target, t, host_.wirePayload(out));
      continue;
    }
    record.attack_computed = true;
    if (!job.error.empty()) {
      host_.log().warn("round {}: attack {} on peer {}: {}", t, spec_.name(), job.target,
                       job.error);
      continue;
    }
    if (coalition_ && leader)
      toFellows(CoalitionBook::craftedMessage(t, job.out, job.target), job.target);
    if (mine) host_.sendWhole(job.target, t, host_.wirePayload(job.out));
  }
}

}  // namespace phalanx::node
