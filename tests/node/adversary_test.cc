// The adversaries (node/adversary/) against a scripted peer: what each kind sends, to whom, and
// how a coalition's leader and follower finish a round, on a clock that moves only when the test
// says so; and the conducts (node/conduct.h) that route a round through the honest path or an
// adversary, on a peer assembled as PeerNode does.
#include "node/adversary/adversary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <deque>
#include <functional>
#include <map>

#include "compress/decode.h"
#include "node/adversary/keyframe_spammer.h"
#include "node/adversary/protocol_roles.h"
#include "node/adversary/wire_attacker.h"
#include "node/conduct.h"
#include "node/exchange/replicas.h"
#include "node/peer_builder.h"
#include "tests/support/node_fixtures.h"
#include "tests/support/recording_transport.h"
#include "train/data_source.h"

namespace phalanx::node {
namespace {

using testing::attackNamed;
using testing::completeGraph;
using testing::RecordingTransport;
using testing::syntheticConfig;

// Time moves when the test advances it; a timer fires when the test fires it.
class ManualClock : public net::Clock {
 public:
  struct ManualTimer : net::Timer {
    explicit ManualTimer(ManualClock& c) : clock(c) {}
    void start(std::chrono::nanoseconds, std::function<void()> cb) override {
      pending = std::move(cb);
    }
    void cancel() override { pending = nullptr; }
    ManualClock& clock;
    std::function<void()> pending;
  };
  TimePoint now() const override { return now_; }
  void post(std::function<void()> task) override { posted.push_back(std::move(task)); }
  std::unique_ptr<net::Timer> timer() override {
    auto t = std::make_unique<ManualTimer>(*this);
    timers.push_back(t.get());
    return t;
  }
  // Fires every pending timer once; true when one was pending.
  bool fire() {
    bool any = false;
    for (ManualTimer* t : timers) {
      if (auto cb = std::exchange(t->pending, nullptr)) {
        cb();
        any = true;
      }
    }
    return any;
  }
  void advance(std::chrono::milliseconds by) { now_ += by; }
  std::vector<ManualTimer*> timers;
  std::deque<std::function<void()>> posted;

 private:
  TimePoint now_{};
};

struct Sent {
  std::uint32_t peer;
  std::uint64_t round;
  net::Transport::Payload payload;
  std::optional<std::uint64_t> sequence;
};

// A peer as an adversary sees it: peer `id` of a complete graph, the vectors it heard set by
// the test, everything it sends recorded.
class ScriptedPeer : public AdversaryHost {
 public:
  ScriptedPeer(std::uint32_t id, Config config, std::size_t n, std::size_t dim = 4)
      : id_(id), config_(std::move(config)), topology_(completeGraph(n, 2)), dim_(dim) {
    neighbours_ = topology_->neighbours(id);
  }
  std::uint32_t self() const override { return id_; }
  const Config& config() const override { return config_; }
  const topologies::Topology& topology() const override { return *topology_; }
  const std::vector<std::uint32_t>& neighbours() const override { return neighbours_; }
  const std::vector<std::uint32_t>& awaited() const override { return neighbours_; }
  const net::RoundGate& gate() const override {
    ADD_FAILURE() << "the gate is not part of these tests";
    std::abort();
  }
  spdlog::logger& log() const override { return *spdlog::default_logger(); }
  net::Clock& clock() override { return clock_; }
  std::size_t dimension() const override { return dim_; }
  bool hubMode() const override { return hub_mode; }
  bool isHub() const override { return is_hub; }
  bool finished() const override { return false; }
  std::vector<std::uint32_t> livePeers() const override { return live; }
  void sendEnvelope(std::uint32_t peer, const net::v1::Envelope& e) override {
    envelopes.emplace_back(peer, e);
  }
  net::Transport::Payload wirePayload(std::span<const float> v) override {
    return std::make_shared<const std::vector<std::uint8_t>>(encodeDense(v));
  }
  void sendWhole(std::uint32_t peer, std::uint64_t round, const net::Transport::Payload& payload,
                 std::optional<std::uint64_t> sequence) override {
    sent.push_back({peer, round, payload, sequence});
  }
  void askForKeyframe(std::uint32_t peer, std::uint64_t) override { asked.push_back(peer); }
  std::span<const float> rowOf(std::uint32_t peer) const override {
    const auto it = rows.find(peer);
    return it == rows.end() ? std::span<const float>() : std::span<const float>(it->second);
  }
  std::span<const float> publicReplica() const override { return replica; }
  std::span<const float> leafOwnVector(std::uint64_t) override { return leaf_own; }
  void applyBroadcast(std::uint64_t, const std::vector<std::uint32_t>&, RoundRecord&) override {
    ++broadcasts;
  }
  void waitForRound() override { ++waits; }
  void finishRound(std::uint64_t round, RoundRecord& record) override {
    finished_rounds.emplace_back(round, record);
  }

  // The vector sent to `peer` (decoded), the last one when several.
  std::vector<float> vectorTo(std::uint32_t peer) const {
    for (auto it = sent.rbegin(); it != sent.rend(); ++it) {
      if (it->peer != peer) continue;
      std::vector<float> v(dim_);
      EXPECT_TRUE(compress::decode(*it->payload, v));
      return v;
    }
    return {};
  }

  ManualClock clock_;
  std::map<std::uint32_t, std::vector<float>> rows;
  std::vector<std::uint32_t> live;
  std::vector<float> replica, leaf_own;
  bool hub_mode = false, is_hub = false;
  std::vector<Sent> sent;
  std::vector<std::pair<std::uint32_t, net::v1::Envelope>> envelopes;
  std::vector<std::uint32_t> asked;
  int broadcasts = 0, waits = 0;
  std::vector<std::pair<std::uint64_t, RoundRecord>> finished_rounds;

 private:
  std::uint32_t id_;
  Config config_;
  std::shared_ptr<const topologies::Topology> topology_;
  std::vector<std::uint32_t> neighbours_;
  std::size_t dim_;
};

// Elementwise within float rounding.
auto Near(std::vector<float> expected) {
  return ::testing::Pointwise(::testing::FloatNear(1e-5f), expected);
}

// Five peers, 3 and 4 Byzantine; honest 0, 1, 2 sent these rows this round.
void hearHonest(ScriptedPeer& p) {
  p.rows[0] = {1, 2, 3, 4};
  p.rows[1] = {2, 2, 2, 2};
  p.rows[2] = {3, 1, 0, 4};
  p.rows[3] = {100, 100, 100, 100};  // a fellow attacker's row is no honest vector
  p.live = {0, 1, 2, 3, 4};
}

Config withAttackers(const std::string& attack, bool collude) {
  Config c = syntheticConfig();
  for (const std::uint32_t id : {3u, 4u})
    c.byzantine[id] = {.attack = attackNamed(attack), .collude = collude};
  return c;
}

TEST(Adversary, AVectorAttackerSendsOneCraftedVectorToEveryHonestNeighbour) {
  ScriptedPeer peer(4, withAttackers("signflip", false), 5);
  hearHonest(peer);
  Adversary adversary(peer, attackNamed("signflip"), {3, 4});
  EXPECT_EQ(adversary.role(), PeerRole::kVectorAttack);
  EXPECT_TRUE(adversary.fellows().empty());
  std::vector<std::uint32_t> heard{0, 1, 2, 3};
  RoundRecord record;
  EXPECT_FALSE(adversary.endRound(7, heard, record));  // nothing held open
  EXPECT_EQ(record.attack_known, 3u);                  // the fellow's row left out
  EXPECT_TRUE(record.attack_computed);
  ASSERT_EQ(peer.sent.size(), 3u);  // 0, 1, 2; not fellow 3
  for (const Sent& s : peer.sent) {
    EXPECT_NE(s.peer, 3u);
    EXPECT_EQ(s.round, 7u);
    EXPECT_EQ(s.payload, peer.sent[0].payload);  // one vector, encoded once
  }
  // signflip: minus the mean of the honest vectors.
  EXPECT_THAT(peer.vectorTo(0), Near({-2.0f, -5.0f / 3, -5.0f / 3, -10.0f / 3}));
}

TEST(Adversary, AnEquivocatorCraftsEachNeighboursVectorWithoutThatNeighboursOwn) {
  ScriptedPeer peer(4, withAttackers("equivocate:signflip", false), 5);
  hearHonest(peer);
  Adversary adversary(peer, attackNamed("equivocate:signflip"), {3, 4});
  std::vector<std::uint32_t> heard{0, 1, 2, 3};
  RoundRecord record;
  adversary.endRound(2, heard, record);
  // Every neighbour its own vector, fellows included; 0's is crafted from 1 and 2 only.
  EXPECT_EQ(peer.sent.size(), 4u);
  EXPECT_THAT(peer.vectorTo(0), Near({-2.5f, -1.5f, -1.0f, -3.0f}));
  EXPECT_THAT(peer.vectorTo(1), Near({-2.0f, -1.5f, -1.5f, -4.0f}));
  EXPECT_NE(peer.sent[0].payload, peer.sent[1].payload);
}

// On a sparse graph a target's view (what the attacker heard, less the target's own) may hold a
// single honest vector, too few for ALIE: each neighbour still gets its own vector, the mean of
// its view, so the equivocation is real (it used to send nothing: a silent peer, not an
// equivocator).
TEST(Adversary, AnEquivocatorWithOneVectorPerViewStillSendsEachNeighbourItsOwn) {
  ScriptedPeer peer(4, withAttackers("equivocate:alie", false), 5);
  peer.rows[0] = {1, 2, 3, 4};
  peer.rows[1] = {5, 5, 5, 5};
  Adversary adversary(peer, attackNamed("equivocate:alie"), {3, 4});
  std::vector<std::uint32_t> heard{0, 1};
  RoundRecord record;
  adversary.endRound(0, heard, record);
  EXPECT_EQ(peer.sent.size(), 4u);  // 0, 1, 2 and fellow 3
  EXPECT_THAT(peer.vectorTo(0), Near({5, 5, 5, 5}));
  EXPECT_THAT(peer.vectorTo(1), Near({1, 2, 3, 4}));
  // Peer 2's view holds both: ALIE itself, μ + 1.5σ, beyond the mean (3, 3.5, 4, 4.5).
  EXPECT_GT(peer.vectorTo(2)[0], 3.0f);
  EXPECT_NE(peer.vectorTo(0), peer.vectorTo(1));
}

TEST(Adversary, TooLittleToAttackFromSendsTheMeanKnown) {
  ScriptedPeer peer(4, withAttackers("alie", false), 5);
  peer.rows[0] = {1, 2, 3, 4};  // one honest vector: ALIE's spread needs two
  Adversary adversary(peer, attackNamed("alie"), {3, 4});
  std::vector<std::uint32_t> heard{0};
  RoundRecord record;
  adversary.endRound(0, heard, record);
  EXPECT_EQ(record.attack_known, 1u);
  EXPECT_THAT(peer.vectorTo(1), Near({1, 2, 3, 4}));
  // Heard nothing honest: silent.
  peer.sent.clear();
  std::vector<std::uint32_t> none{3};
  RoundRecord quiet;
  adversary.endRound(1, none, quiet);
  EXPECT_TRUE(peer.sent.empty());
  EXPECT_EQ(quiet.attack_known, 0u);
  EXPECT_FALSE(quiet.attack_computed);
}

TEST(Adversary, ColludersShareWhatTheyHeardAndTheLeaderCraftsForTheFollower) {
  // 3 and 4 collude; 3 leads (lowest live id). Each hears the honest rows itself here (complete
  // graph), so the shares are count-0 markers; the leader hands its crafted vector over.
  ScriptedPeer leader_peer(3, withAttackers("signflip", true), 5);
  ScriptedPeer follower_peer(4, withAttackers("signflip", true), 5);
  for (ScriptedPeer* p : {&leader_peer, &follower_peer}) hearHonest(*p);
  Adversary leader(leader_peer, attackNamed("signflip"), {3, 4});
  Adversary follower(follower_peer, attackNamed("signflip"), {3, 4});
  EXPECT_EQ(leader.fellows(), std::vector<std::uint32_t>{4});
  EXPECT_EQ(follower.fellows(), std::vector<std::uint32_t>{3});

  std::vector<std::uint32_t> heard{0, 1, 2};
  RoundRecord record, follower_record;
  record.round = follower_record.round = 5;
  // The follower holds its round open: no share from the leader yet.
  EXPECT_TRUE(follower.endRound(5, heard, follower_record));
  EXPECT_TRUE(follower_peer.sent.empty());
  EXPECT_TRUE(follower_peer.finished_rounds.empty());
  // The leader: its share out, the follower's in, then it crafts, hands over and sends.
  std::vector<std::uint32_t> leader_heard{0, 1, 2};  // (the follower kept its `heard`)
  EXPECT_TRUE(leader.endRound(5, leader_heard, record));
  for (const auto& [to, e] : follower_peer.envelopes) {
    ASSERT_EQ(to, 3u);
    EXPECT_TRUE(leader.takeCoalition(4, e.coalition()));
  }
  // The share woke it (no poll): the round is finished and no timer is left pending.
  ASSERT_EQ(leader_peer.finished_rounds.size(), 1u);
  EXPECT_FALSE(leader_peer.clock_.fire());
  EXPECT_TRUE(leader_peer.finished_rounds[0].second.attack_computed);
  EXPECT_EQ(leader_peer.sent.size(), 3u);
  // What the leader sent its fellow: its share and the crafted vector.
  for (const auto& [to, e] : leader_peer.envelopes) {
    ASSERT_EQ(to, 4u);
    EXPECT_TRUE(follower.takeCoalition(3, e.coalition()));
  }
  ASSERT_EQ(follower_peer.finished_rounds.size(), 1u);
  EXPECT_FALSE(follower_peer.clock_.fire());
  // The follower sent the leader's vector without computing one itself.
  EXPECT_FALSE(follower_peer.finished_rounds[0].second.attack_computed);
  EXPECT_EQ(follower_peer.vectorTo(0), leader_peer.vectorTo(0));
  // A coalition message from a peer that is no fellow is refused.
  EXPECT_FALSE(follower.takeCoalition(0, leader_peer.envelopes[0].second.coalition()));
}

// Follower 4 of a coalition with 3, its round 9 held open for its leader's share.
struct HeldFollower {
  HeldFollower() {
    hearHonest(peer);
    EXPECT_TRUE(follower.endRound(9, heard, record));
    EXPECT_TRUE(peer.finished_rounds.empty());
  }
  ScriptedPeer peer{4, withAttackers("signflip", true), 5};
  Adversary follower{peer, attackNamed("signflip"), {3, 4}};
  std::vector<std::uint32_t> heard{0, 1, 2};
  RoundRecord record;
};

TEST(Adversary, AFollowerWhoseLeaderNeverSharesCraftsItselfWhenTheWaitRunsOut) {
  HeldFollower held;
  ScriptedPeer& peer = held.peer;
  EXPECT_TRUE(peer.clock_.fire());  // still within a quarter of the deadline: waits on
  EXPECT_TRUE(peer.finished_rounds.empty());
  peer.clock_.advance(std::chrono::milliseconds(peer.config().rounds.deadline_ms / 4));
  EXPECT_TRUE(peer.clock_.fire());
  ASSERT_EQ(peer.finished_rounds.size(), 1u);
  EXPECT_TRUE(peer.finished_rounds[0].second.attack_computed);
  EXPECT_EQ(peer.sent.size(), 3u);
}

TEST(Adversary, AHeldRoundIsCheckedAgainWhenALinkGoesDown) {
  // The leader's link goes down: no live fellow is left to wait for, so the round goes on at
  // once, long before the wait would run out.
  HeldFollower held;
  held.peer.live = {0, 1, 2};
  held.follower.linkDown();
  ASSERT_EQ(held.peer.finished_rounds.size(), 1u);
  EXPECT_TRUE(held.peer.finished_rounds[0].second.attack_computed);
  EXPECT_FALSE(held.peer.clock_.fire());
}

TEST(Adversary, ALeafAttackerSendsUpAtTheRoundStartAndAppliesTheBroadcastAtItsEnd) {
  ScriptedPeer peer(4, withAttackers("signflip", false), 5);
  peer.hub_mode = true;
  peer.leaf_own = {1, 1, 1, 1};
  Adversary adversary(peer, attackNamed("signflip"), {3, 4});
  EXPECT_FALSE(adversary.holdsRound(0));  // a leaf hears the hub only after it sent
  EXPECT_TRUE(adversary.startRound(0));
  EXPECT_EQ(peer.waits, 1);
  EXPECT_THAT(peer.vectorTo(0), Near({-1, -1, -1, -1}));
  std::vector<std::uint32_t> heard{0};
  RoundRecord record;
  EXPECT_FALSE(adversary.endRound(0, heard, record));
  EXPECT_EQ(peer.broadcasts, 1);
  EXPECT_EQ(record.attack_known, 1u);
  EXPECT_TRUE(record.attack_computed);
}

TEST(Adversary, RefusesAttacksOutsideTheHubsThreatModel) {
  ScriptedPeer hub(0, withAttackers("alie", false), 5);
  hub.hub_mode = hub.is_hub = true;
  EXPECT_THROW(Adversary(hub, attackNamed("alie"), {0}), ConfigError);
  ScriptedPeer leaf(4, withAttackers("dissensus", false), 5);
  leaf.hub_mode = true;
  EXPECT_THAT(
      [&] {
        Adversary(leaf, attackNamed("dissensus"), {3, 4});
      },
      ::testing::ThrowsMessage<ConfigError>(::testing::HasSubstr("per target")));
}

TEST(Adversary, SwitchingChangesWhatItDoesAndKeepsItsCoalition) {
  ScriptedPeer peer(4, withAttackers("signflip", true), 5);
  hearHonest(peer);
  Adversary adversary(peer, attackNamed("signflip"), {3, 4});
  ASSERT_TRUE(adversary.switchTo(attackNamed("none")));
  EXPECT_EQ(adversary.role(), PeerRole::kHonest);
  EXPECT_EQ(adversary.fellows(), std::vector<std::uint32_t>{3});
  ASSERT_TRUE(adversary.switchTo(attackNamed("round_lie")));
  EXPECT_EQ(adversary.announcedRound(0), std::uint64_t(1) << 62);
  ASSERT_TRUE(adversary.switchTo(attackNamed("alie")));
  EXPECT_EQ(adversary.role(), PeerRole::kVectorAttack);
  EXPECT_EQ(adversary.announcedRound(6), 6u);
}

TEST(ProtocolRoles, EachMisbehavesAroundAnHonestRound) {
  ScriptedPeer peer(1, syntheticConfig(100, 400), 4);
  EXPECT_EQ(Staller(peer).startDelay(), std::chrono::milliseconds(360));  // 0.9 × the ceiling
  const RoundLiar liar;
  EXPECT_EQ(liar.announcedRound(8), std::uint64_t(1) << 62);
  EXPECT_EQ(liar.announcedRound(9), 0u);
  EXPECT_EQ(liar.announcedRound(10), 19u);  // just past a receiver's window
  EXPECT_EQ(liar.announcedRound(11), 1011u);
  net::v1::RoundMessage m;
  m.set_round(9);
  m.set_sequence(4);
  const auto lie = liar.lieAbout(m);
  ASSERT_TRUE(lie);
  EXPECT_EQ(lie->round(), 0u);
  EXPECT_EQ(lie->sequence(), 4u);
  ResyncFlooder flooder(peer);
  flooder.afterHonestMix(3);
  EXPECT_EQ(peer.asked, (std::vector<std::uint32_t>{0, 2, 3}));
  EXPECT_TRUE(KeyframeSpammer().spamsKeyframes());
  EXPECT_FALSE(Tactic().spamsKeyframes());
}

TEST(WireAttacker, GarbageWrongLengthsAndReplaysReachEveryNeighbour) {
  ScriptedPeer peer(0, syntheticConfig(), 3);
  WireAttacker garbage(peer, Misbehaviour::kGarbage);
  garbage.endRound(5);
  ASSERT_EQ(peer.sent.size(), 2u);
  EXPECT_EQ(peer.sent[0].payload->size(), 64u + 5);
  std::vector<float> out(4);
  EXPECT_FALSE(compress::decode(*peer.sent[0].payload, out));  // not a message at all
  // Seeded: the same bytes on every rerun.
  ScriptedPeer again(0, syntheticConfig(), 3);
  WireAttacker(again, Misbehaviour::kGarbage).endRound(5);
  EXPECT_EQ(*again.sent[0].payload, *peer.sent[0].payload);

  peer.sent.clear();
  WireAttacker(peer, Misbehaviour::kWrongDim).endRound(0);
  EXPECT_FALSE(compress::decode(*peer.sent[0].payload, out));  // 11 floats for 4
  std::vector<float> eleven(11);
  EXPECT_TRUE(compress::decode(*peer.sent[0].payload, eleven));

  peer.sent.clear();
  peer.replica = {1, 2, 3, 4};
  WireAttacker replay(peer, Misbehaviour::kReplay);
  replay.endRound(0);
  peer.replica = {9, 9, 9, 9};  // the model moved on; the replay did not
  replay.endRound(1);
  ASSERT_EQ(peer.sent.size(), 4u);
  for (const Sent& s : peer.sent) EXPECT_EQ(s.sequence, std::optional<std::uint64_t>(1));
  EXPECT_THAT(peer.vectorTo(1), Near({1, 2, 3, 4}));
}

// Peer `id` of five on a complete graph as PeerNode assembles it (setup, learner, wire, exchange,
// honest round, the conduct the builder picks), its host scripted and its wire recorded.
struct ConductBench {
  explicit ConductBench(std::uint32_t id, const Config& config)
      : host(id, config, 5),
        setup(setupFor(id, config)),
        neighbours(neighboursOf(setup)),
        learner(learnerFor(setup, attackFor(setup))),
        wire(id, learner->dimension(), metrics),
        transport(neighbours),
        exchange(makeExchange(buildExchange(setup, *learner, log),
                              ExchangeContext{id, setup.config, neighbours, *learner, wire, log,
                                              metrics, rejections})),
        honest(setup, neighbours, *learner, *exchange, wire, metrics, rejections, log),
        conduct(conductFor(setup, host, honest)) {
    wire.attach(transport);
  }
  static PeerSetup setupFor(std::uint32_t id, const Config& config) {
    PeerSetup s;
    s.config = config;
    s.topology = completeGraph(5, 2);
    s.id = id;
    const train::TrainTest data = train::loadData(s.config.data, s.config.seed);
    s.shard = train::shardOf(s.config.data, data.train, 5, id, s.config.seed);
    s.test = std::make_shared<train::Dataset>(data.test);
    return s;
  }
  // The rounds of the messages sent to each peer.
  std::map<std::uint32_t, std::vector<std::uint64_t>> roundsSent() const {
    std::map<std::uint32_t, std::vector<std::uint64_t>> out;
    for (const auto& m : transport.sent) out[m.peer].push_back(m.header.round());
    return out;
  }

  spdlog::logger& log = *spdlog::default_logger();
  ScriptedPeer host;
  PeerSetup setup;
  std::vector<std::uint32_t> neighbours;
  std::shared_ptr<train::Learner> learner;
  NodeMetrics metrics;
  std::map<net::Refusal, std::uint64_t> rejections;
  RoundWire wire;
  RecordingTransport transport;
  std::unique_ptr<RoundExchange> exchange;
  HonestRound honest;
  std::unique_ptr<Conduct> conduct;
};

TEST(Conduct, AnHonestPeerRunsItsHonestRoundAndBecomesByzantineOnlyWhenSwitched) {
  ConductBench bench(0, withAttackers("signflip", false));
  Conduct& c = *bench.conduct;
  EXPECT_EQ(c.role(), PeerRole::kHonest);
  EXPECT_EQ(c.name(), "honest");
  EXPECT_FALSE(c.holdsRound(3));
  EXPECT_EQ(c.announcedRound(3), 3u);
  EXPECT_TRUE(c.fellows().empty());
  EXPECT_FALSE(c.takeCoalition(3, net::v1::Coalition()));
  EXPECT_FALSE(c.lieAbout(net::v1::RoundMessage()));
  ASSERT_TRUE(c.send(0, [] {}));
  // Its model goes to every neighbour, honest or not, for round 0.
  const std::map<std::uint32_t, std::vector<std::uint64_t>> every{
      {1, {0}}, {2, {0}}, {3, {0}}, {4, {0}}};
  EXPECT_EQ(bench.roundsSent(), every);
  std::vector<std::uint32_t> heard;
  RoundRecord record;
  EXPECT_TRUE(c.endRound(0, heard, record));
  EXPECT_FALSE(c.diverged());
  EXPECT_TRUE(c.evaluation(0, true).has_value());
  EXPECT_TRUE(bench.host.sent.empty());  // nothing went through an adversary's hooks

  auto same = c.switchTo(attackNamed("none"));
  ASSERT_TRUE(same);
  EXPECT_EQ(*same, nullptr);  // honest already: it stays this conduct
  auto turned = c.switchTo(attackNamed("signflip"));
  ASSERT_TRUE(turned);
  ASSERT_NE(*turned, nullptr);
  EXPECT_EQ((*turned)->role(), PeerRole::kVectorAttack);
  EXPECT_EQ((*turned)->name(), "byzantine: signflip");
  EXPECT_FALSE(c.switchTo(attackNamed("round_lie")).value() == nullptr);
}

TEST(Conduct, AVectorAttackerSendsThroughItsAdversaryAndNeverEvaluates) {
  ConductBench bench(4, withAttackers("signflip", false));
  hearHonest(bench.host);
  Conduct& c = *bench.conduct;
  EXPECT_EQ(c.role(), PeerRole::kVectorAttack);
  EXPECT_EQ(c.name(), "byzantine: signflip");
  EXPECT_EQ(c.startDelay(), std::chrono::microseconds(0));  // an attack vector costs nothing
  c.send(0, [] {});
  EXPECT_TRUE(bench.transport.sent.empty());  // no honest vector leaves it
  std::vector<std::uint32_t> heard{0, 1, 2};
  EXPECT_EQ(c.screen(0, heard, {}, 0), heard);  // an attacker screens nobody out
  RoundRecord record;
  EXPECT_TRUE(c.endRound(0, heard, record));  // it crafts from what it heard, holds nothing
  EXPECT_TRUE(record.attack_computed);
  EXPECT_EQ(bench.host.sent.size(), 3u);  // the adversary's vector to honest 0, 1, 2
  EXPECT_TRUE(bench.transport.sent.empty());
  EXPECT_TRUE(c.handBack(0, true, [] {}));
  EXPECT_FALSE(c.evaluation(0, true).has_value());
  EXPECT_FALSE(c.diverged());
  EXPECT_FALSE(c.stepsAlone());
  // Switched to a protocol role it sends honest vectors again, and stays Byzantine.
  auto same = c.switchTo(attackNamed("stall"));
  ASSERT_TRUE(same);
  EXPECT_EQ(*same, nullptr);
  EXPECT_EQ(c.role(), PeerRole::kHonest);
  EXPECT_EQ(c.name(), "byzantine: stall");
  // The staller's wait, 0.9 × the 5 s ceiling, after a computation that takes no virtual time.
  EXPECT_EQ(c.startDelay(), std::chrono::milliseconds(4500));
  ASSERT_TRUE(c.send(1, [] {}));
  EXPECT_EQ(bench.roundsSent().size(), 4u);  // its honest model to every neighbour
  EXPECT_TRUE(c.evaluation(1, true).has_value());
}

TEST(Conduct, ARoundLiarAnnouncesItsLieAndOtherwiseRunsTheHonestRound) {
  Config config = syntheticConfig();
  config.byzantine[2] = {.attack = attackNamed("round_lie")};
  ConductBench bench(2, config);
  Conduct& c = *bench.conduct;
  EXPECT_EQ(c.role(), PeerRole::kHonest);
  EXPECT_EQ(c.announcedRound(8), std::uint64_t(1) << 62);
  net::v1::RoundMessage m;
  m.set_round(9);
  const auto lie = c.lieAbout(m);
  ASSERT_TRUE(lie);
  EXPECT_EQ(lie->round(), 0u);
  ASSERT_TRUE(c.send(0, [] {}));
  EXPECT_EQ(bench.roundsSent().size(), 4u);
  std::vector<std::uint32_t> heard;
  RoundRecord record;
  EXPECT_TRUE(c.endRound(0, heard, record));
}

}  // namespace
}  // namespace phalanx::node
