// The exchange modes (node/exchange/) one at a time, outside any peer: a scripted learner, a
// transport that records what is sent, and the round's messages written by the test. Each mode
// is made the way a peer makes it (buildExchange, makeExchange), so the tests also pin which
// class each configuration gets.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <numeric>

#include "compress/decode.h"
#include "net/signing.h"
#include "node/digest_gossip.h"
#include "node/exchange/gradient_exchange.h"
#include "node/exchange/hub_exchange.h"
#include "node/exchange/model_exchange.h"
#include "node/exchange/outer_exchange.h"
#include "node/peer_builder.h"
#include "node/round_mix.h"
#include "tests/support/loopback_cluster.h"
#include "tests/support/node_fixtures.h"
#include "tests/support/recording_transport.h"

namespace phalanx::node {
namespace {

using testing::completeGraph;
using testing::RecordingTransport;
using testing::syntheticConfig;

constexpr std::size_t kDim = 4;

// x starts at (1, 2, 3, 4); a local step takes 0.5 off every coordinate; round t's gradient is
// (t + 1, 1, -1, 0.5); an aggregate is subtracted from x and kept.
class ScriptedLearner final : public train::Learner {
 public:
  std::size_t dimension() const override { return kDim; }
  std::vector<compress::LayerShape> layers() const override { return {{.rows = kDim}}; }
  std::string identity() const override { return "scripted"; }
  double step(std::uint64_t t) override {
    ++steps;
    for (float& v : x_) v -= 0.5f;
    return double(t);
  }
  double gradient(std::uint64_t t) override {
    g_ = {float(t + 1), 1.0f, -1.0f, 0.5f};
    return double(t);
  }
  std::span<const float> lastGradient() const override { return g_; }
  void applyAggregate(std::uint64_t, std::span<const float> a) override {
    aggregate.assign(a.begin(), a.end());
    for (std::size_t i = 0; i < kDim; ++i) x_[i] -= a[i];
  }
  std::span<float> parameters() override { return x_; }
  std::span<const float> parameters() const override { return x_; }
  double learningRate(std::uint64_t) const override { return 0.1; }
  std::uint64_t epochOf(std::uint64_t t) const override { return t; }
  std::uint64_t roundsPerEpoch() const override { return 10; }
  std::optional<train::Evaluation> evaluation(const train::Dataset*, bool) override {
    return std::nullopt;
  }
  void save(train::Checkpoint&) const override {}
  void restore(const train::Checkpoint&) override {}

  int steps = 0;
  std::vector<float> aggregate;

 private:
  std::vector<float> x_{1, 2, 3, 4};
  std::vector<float> g_ = std::vector<float>(kDim, 0.0f);
};

std::vector<float> decoded(const net::Transport::Payload& p) {
  std::vector<float> v(kDim);
  EXPECT_TRUE(compress::decode(*p, v).has_value());
  return v;
}

// Model gossip compressed to the top half of each delta.
Config topkHalf() {
  Config c = syntheticConfig();
  c.compression.codec = compress::CodecId::kTopk;
  c.compression.density = 0.5;
  return c;
}

// Peer `id` of a complete graph of n (budget 0), its exchange made as a peer makes it.
struct Harness {
  explicit Harness(Config c, std::uint32_t id = 0, std::size_t n = 3,
                   std::shared_ptr<const topologies::Topology> topology = nullptr)
      : log(std::make_shared<spdlog::logger>("exchange-test",
                                             std::make_shared<spdlog::sinks::null_sink_mt>())),
        transport([&] {
          setup.config = std::move(c);
          setup.topology = topology ? topology : completeGraph(n, 0);
          setup.id = id;
          return setup.topology->neighbours(id);
        }()),
        wire(id, kDim, metrics) {
    neighbours = setup.topology->neighbours(id);
    wire.attach(transport);
    exchange = makeExchange(
        buildExchange(setup, learner, *log),
        ExchangeContext{id, setup.config, neighbours, learner, wire, *log, metrics, rejections});
  }
  // Round t's messages as the gate hands them over, by sender.
  static net::RoundResult result(std::uint64_t t,
                                 std::map<std::uint32_t, net::v1::RoundMessage> messages) {
    net::RoundResult r;
    r.round = t;
    for (auto& [sender, m] : messages) r.messages.emplace(sender, std::move(m));
    return r;
  }
  static net::v1::RoundMessage message(std::uint32_t sender, std::uint64_t t, std::uint64_t seq,
                                       net::v1::RoundMessage::Kind kind, std::span<const float> v) {
    net::v1::RoundMessage m;
    m.set_sender(sender);
    m.set_round(t);
    m.set_sequence(seq);
    m.set_kind(kind);
    const auto bytes = encodeDense(v);
    m.set_payload(std::string(bytes.begin(), bytes.end()));
    return m;
  }

  PeerSetup setup;
  std::shared_ptr<spdlog::logger> log;
  ScriptedLearner learner;
  NodeMetrics metrics;
  std::map<net::Refusal, std::uint64_t> rejections;
  RecordingTransport transport;
  RoundWire wire;
  std::vector<std::uint32_t> neighbours;
  std::unique_ptr<RoundExchange> exchange;
};

TEST(ModelExchange, UncompressedSendsKeyframesAndMixesToTheRuleOutputExactly) {
  Harness h(syntheticConfig());
  ASSERT_NE(dynamic_cast<ModelExchange*>(h.exchange.get()), nullptr);
  EXPECT_DOUBLE_EQ(h.exchange->send(0, false), 0.0);
  EXPECT_EQ(h.learner.steps, 1);
  ASSERT_EQ(h.transport.sent.size(), 2u);  // neighbours 1 and 2
  for (const auto& m : h.transport.sent) {
    EXPECT_EQ(m.header.kind(), net::v1::RoundMessage::KEYFRAME);
    EXPECT_EQ(m.header.sequence(), 1u);
    EXPECT_EQ(decoded(m.payload), (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f}));
  }
  const std::vector<float> y1{9, 9, 9, 9};
  auto r =
      Harness::result(0, {{1, Harness::message(1, 0, 1, net::v1::RoundMessage::KEYFRAME, y1)}});
  EXPECT_EQ(h.exchange->receive(r), (std::vector<std::uint32_t>{1}));
  EXPECT_EQ(std::vector<float>(h.exchange->rowOf(1).begin(), h.exchange->rowOf(1).end()), y1);
  EXPECT_TRUE(h.exchange->rowOf(2).empty());
  // MoNNA: uncompressed with gamma auto, the model becomes the rule's output exactly.
  RoundRecord record;
  const std::vector<float> z{7, 6, 5, 4};
  h.exchange->apply(0, z, record);
  EXPECT_EQ(std::vector<float>(h.learner.parameters().begin(), h.learner.parameters().end()), z);
  EXPECT_FALSE(record.gamma.has_value());
}

// mixing.step η: the model moves η of the way from its own vector to the rule's output.
TEST(ModelExchange, TheGossipStepScalesTheMoveTowardTheMix) {
  Config c = syntheticConfig();
  c.mixing.step = 0.5;
  Harness h(c);
  h.exchange->send(0, false);
  const std::vector<float> own(h.learner.parameters().begin(), h.learner.parameters().end());
  RoundRecord record;
  const std::vector<float> z{7, 6, 5, 4};
  h.exchange->apply(0, z, record);
  for (std::size_t i = 0; i < z.size(); ++i) {
    EXPECT_FLOAT_EQ(h.learner.parameters()[i], own[i] + 0.5f * (z[i] - own[i])) << i;
  }
}

TEST(ModelExchange, CompressedSendsDeltasAfterTheKeyframeAndRecordsItsStep) {
  Config c = topkHalf();
  c.compression.gamma = 0.5;
  Harness h(c);
  h.exchange->send(0, false);  // every neighbour is owed a keyframe only once connected
  h.exchange->connected(1);
  h.exchange->send(1, false);
  ASSERT_EQ(h.transport.sent.size(), 4u);
  EXPECT_EQ(h.transport.sent[0].header.kind(), net::v1::RoundMessage::KEYFRAME);  // t = 0 % 100
  EXPECT_EQ(h.transport.sent[2].header.kind(), net::v1::RoundMessage::KEYFRAME);  // to 1: owed
  EXPECT_EQ(h.transport.sent[2].peer, 1u);
  EXPECT_EQ(h.transport.sent[3].header.kind(), net::v1::RoundMessage::DELTA);  // to 2
  EXPECT_EQ(h.transport.sent[3].header.sequence(), 2u);
  RoundRecord record;
  const std::span<const float> x = h.learner.parameters();
  const std::vector<float> before(x.begin(), x.end());
  const std::span<const float> own = h.exchange->pivot();
  const std::vector<float> pivot(own.begin(), own.end());
  const std::vector<float> z{0, 0, 0, 0};
  h.exchange->apply(1, z, record);
  ASSERT_TRUE(record.gamma.has_value());
  EXPECT_DOUBLE_EQ(*record.gamma, 0.5);
  for (std::size_t i = 0; i < kDim; ++i)
    EXPECT_FLOAT_EQ(h.learner.parameters()[i], before[i] + 0.5f * (0.0f - pivot[i]));
}

TEST(ModelExchange, AResyncIsGrantedThenThrottledAndAGrantOwesAKeyframe) {
  Config c = topkHalf();
  c.compression.keyframe_every = 0;
  Harness h(c);
  h.exchange->send(0, false);  // deltas: nobody is owed a keyframe yet
  EXPECT_TRUE(h.exchange->grantResync(1, 1));
  EXPECT_FALSE(h.exchange->grantResync(1, 2));  // 16 rounds apart at least
  h.exchange->send(1, false);
  EXPECT_EQ(h.transport.sent[2].peer, 1u);
  EXPECT_EQ(h.transport.sent[2].header.kind(), net::v1::RoundMessage::KEYFRAME);
  EXPECT_EQ(h.transport.sent[3].header.kind(), net::v1::RoundMessage::DELTA);
}

TEST(ModelExchange, AGapAsksForAKeyframeAndAStaleSequenceIsCounted) {
  Harness h(syntheticConfig());
  const std::vector<float> v{1, 1, 1, 1};
  auto first =
      Harness::result(0, {{1, Harness::message(1, 0, 5, net::v1::RoundMessage::KEYFRAME, v)}});
  EXPECT_EQ(h.exchange->receive(first).size(), 1u);
  auto stale =
      Harness::result(1, {{1, Harness::message(1, 1, 5, net::v1::RoundMessage::KEYFRAME, v)}});
  EXPECT_TRUE(h.exchange->receive(stale).empty());
  EXPECT_EQ(h.rejections[net::Refusal::kStaleSequence], 1u);
  auto gap = Harness::result(2, {{1, Harness::message(1, 2, 9, net::v1::RoundMessage::DELTA, v)}});
  EXPECT_TRUE(h.exchange->receive(gap).empty());
  ASSERT_EQ(h.transport.envelopes.size(), 1u);
  EXPECT_TRUE(h.transport.envelopes[0].second.has_resync());
  EXPECT_EQ(h.transport.envelopes[0].second.resync().last_sequence(), 5u);
  EXPECT_EQ(h.metrics.resyncs_requested_total, 1u);
  // A gradient in model exchange is the wrong kind.
  auto wrong =
      Harness::result(3, {{2, Harness::message(2, 3, 1, net::v1::RoundMessage::GRADIENT, v)}});
  EXPECT_TRUE(h.exchange->receive(wrong).empty());
  EXPECT_EQ(h.rejections[net::Refusal::kUnexpectedKind], 1u);
}

TEST(GradientExchange, StandaloneGradientsGoOutWholeAndTheAggregateIsApplied) {
  Config c = syntheticConfig();
  c.exchange = Exchange::kGradient;
  c.compression.feedback = compress::FeedbackKind::kNone;
  c.optimizer.momentum = 0;  // m = g: what goes out is the gradient itself
  Harness h(c);
  ASSERT_NE(dynamic_cast<GradientExchange*>(h.exchange.get()), nullptr);
  h.exchange->send(2, false);
  ASSERT_EQ(h.transport.sent.size(), 2u);
  EXPECT_EQ(h.transport.sent[0].header.kind(), net::v1::RoundMessage::GRADIENT);
  EXPECT_EQ(decoded(h.transport.sent[0].payload), (std::vector<float>{3, 1, -1, 0.5f}));
  EXPECT_EQ(std::vector<float>(h.exchange->pivot().begin(), h.exchange->pivot().end()),
            (std::vector<float>{3, 1, -1, 0.5f}));
  EXPECT_EQ(h.exchange->wholeKind(), net::v1::RoundMessage::GRADIENT);
  const std::vector<float> g1{1, 2, 3, 4};
  auto r =
      Harness::result(2, {{1, Harness::message(1, 2, 1, net::v1::RoundMessage::GRADIENT, g1)},
                          {2, Harness::message(2, 2, 1, net::v1::RoundMessage::KEYFRAME, g1)}});
  EXPECT_EQ(h.exchange->receive(r), (std::vector<std::uint32_t>{1}));
  EXPECT_EQ(h.rejections[net::Refusal::kUnexpectedKind], 1u);
  // Standalone messages keep nothing in sequence: a late one is not kept.
  EXPECT_FALSE(h.exchange->takeUnmixed(r.messages.at(1)).kept);
  EXPECT_FALSE(h.exchange->stepsAlone());
  RoundRecord record;
  h.exchange->apply(2, g1, record);
  EXPECT_EQ(h.learner.aggregate, g1);
}

TEST(GradientExchange, TrackedMomentumGoesThroughTheReplica) {
  Config c = syntheticConfig();
  c.exchange = Exchange::kGradient;
  c.compression.feedback = compress::FeedbackKind::kEf21;
  c.optimizer.momentum = 0;
  Harness h(c);
  h.exchange->send(0, false);
  ASSERT_EQ(h.transport.sent.size(), 2u);
  EXPECT_EQ(h.transport.sent[0].header.kind(), net::v1::RoundMessage::KEYFRAME);
  EXPECT_EQ(decoded(h.transport.sent[0].payload), (std::vector<float>{1, 1, -1, 0.5f}));
  EXPECT_EQ(h.exchange->wholeKind(), net::v1::RoundMessage::KEYFRAME);
  EXPECT_EQ(
      std::vector<float>(h.exchange->publicReplica().begin(), h.exchange->publicReplica().end()),
      (std::vector<float>{1, 1, -1, 0.5f}));
}

TEST(HubExchange, TheHubBroadcastsTheAggregateItAppliesAndALeafAppliesWhatItHears) {
  Config c = syntheticConfig();
  c.exchange = Exchange::kHub;
  c.compression.feedback = compress::FeedbackKind::kNone;
  c.optimizer.momentum = 0;
  std::vector<topologies::NodeSpec> nodes{
      {.id = 0, .port = 20000}, {.id = 1, .port = 20001}, {.id = 2, .port = 20002}};
  const auto star = std::make_shared<const topologies::Topology>(
      nodes, std::vector<topologies::Edge>{{0, 1}, {0, 2}}, 0);
  Harness hub(c, 0, 3, star);
  ASSERT_EQ(hub.exchange->hubSide(), HubSide::kHub);
  EXPECT_FALSE(hub.exchange->corroborates());
  hub.exchange->send(0, false);
  EXPECT_TRUE(hub.transport.sent.empty());  // the hub's vector is only its pivot
  EXPECT_EQ(std::vector<float>(hub.exchange->pivot().begin(), hub.exchange->pivot().end()),
            (std::vector<float>{1, 1, -1, 0.5f}));
  RoundRecord record;
  const std::vector<float> update{0.25f, 0.5f, 0.75f, 1};
  hub.exchange->apply(0, update, record);
  ASSERT_EQ(hub.transport.sent.size(), 2u);
  EXPECT_EQ(decoded(hub.transport.sent[1].payload), update);  // dense downlink
  EXPECT_EQ(hub.learner.aggregate, update);

  Harness leaf(c, 1, 3, star);
  ASSERT_EQ(leaf.exchange->hubSide(), HubSide::kLeaf);
  EXPECT_FALSE(leaf.exchange->mixes());
  RoundRecord missing;
  EXPECT_FALSE(leaf.exchange->applyBroadcast(0, {}, missing));
  auto r =
      Harness::result(0, {{0, Harness::message(0, 0, 1, net::v1::RoundMessage::GRADIENT, update)}});
  const auto heard = leaf.exchange->receive(r);
  EXPECT_TRUE(leaf.exchange->applyBroadcast(0, heard, record));
  EXPECT_EQ(leaf.learner.aggregate, update);
  // What an attacking leaf computes as its honest vector: the gradient, tracked as sent.
  EXPECT_EQ(leaf.exchange->leafOwnVector(0).size(), kDim);
  NodeMetrics m;
  m.bytes_sent_total = 7;
  leaf.exchange->countDirected(m);
  EXPECT_EQ(m.bytes_uplink_total, 7u);
}

TEST(OuterExchange, ARoundIsHLocalStepsAndTheOuterStepFollowsTheMix) {
  Config c = syntheticConfig();
  c.exchange = Exchange::kOuter;
  c.outer.steps = 3;
  c.outer.mix = OuterMix::kModels;
  c.outer.lr = 1.0;
  c.outer.momentum = 0;
  c.outer.nesterov = false;
  Harness h(c);
  ASSERT_NE(dynamic_cast<OuterExchange<ModelExchange>*>(h.exchange.get()), nullptr);
  EXPECT_EQ(h.exchange->stepsPerRound(), 3u);
  EXPECT_EQ(h.exchange->firstStep(2), 6u);
  EXPECT_EQ(h.exchange->recordedSteps(2), std::optional<std::uint64_t>(9));
  h.exchange->send(0, false);
  EXPECT_EQ(h.learner.steps, 3);
  EXPECT_EQ(decoded(h.transport.sent[0].payload), (std::vector<float>{-0.5f, 0.5f, 1.5f, 2.5f}));
  // lr 1, no momentum: the outer step lands exactly on the mix.
  RoundRecord record;
  const std::vector<float> z{5, 5, 5, 5};
  h.exchange->apply(0, z, record);
  EXPECT_EQ(std::vector<float>(h.learner.parameters().begin(), h.learner.parameters().end()), z);

  Config g = c;
  g.outer.mix = OuterMix::kPseudoGradients;
  g.compression.feedback = compress::FeedbackKind::kNone;
  g.optimizer.momentum = 0;  // the pseudo-gradient goes out as it is
  Harness pg(g);
  ASSERT_NE(dynamic_cast<OuterExchange<GradientExchange>*>(pg.exchange.get()), nullptr);
  pg.exchange->send(0, false);
  EXPECT_EQ(decoded(pg.transport.sent[0].payload), (std::vector<float>{1.5f, 1.5f, 1.5f, 1.5f}));
}

TEST(RoundWire, SequencesAreCountedPerEdgeAndALieGoesOutFirst) {
  NodeMetrics metrics;
  RecordingTransport transport({1, 2});
  RoundWire wire(0, kDim, metrics);
  wire.attach(transport);
  const auto payload = std::make_shared<const std::vector<std::uint8_t>>(
      encodeDense(std::vector<float>{1, 2, 3, 4}));
  wire.send(1, 0, net::v1::RoundMessage::DELTA, payload, 0.5f);
  wire.send(1, 1, net::v1::RoundMessage::KEYFRAME, payload, 0.5f);
  wire.send(2, 1, net::v1::RoundMessage::KEYFRAME, payload);
  EXPECT_EQ(transport.sent[0].header.sequence(), 1u);
  EXPECT_FLOAT_EQ(transport.sent[0].header.shift_step(), 0.5f);
  EXPECT_EQ(transport.sent[1].header.sequence(), 2u);
  EXPECT_FLOAT_EQ(transport.sent[1].header.shift_step(), 0.0f);  // only a DELTA carries one
  EXPECT_EQ(transport.sent[2].header.sequence(), 1u);
  EXPECT_EQ(metrics.messages_sent_total, 3u);
  EXPECT_EQ(metrics.keyframes_sent_total, 2u);
  wire.setLie([](const net::v1::RoundMessage& h) {
    net::v1::RoundMessage lie = h;
    lie.set_round(h.round() + 1000);
    return std::optional(lie);
  });
  wire.send(2, 2, net::v1::RoundMessage::KEYFRAME, payload, 1.0f, 7);
  ASSERT_EQ(transport.sent.size(), 5u);
  EXPECT_EQ(transport.sent[3].header.round(), 1002u);
  EXPECT_EQ(transport.sent[4].header.round(), 2u);
  EXPECT_EQ(transport.sent[4].header.sequence(), 7u);
}

TEST(RoundMix, TheRuleSeesThePivotFirstAndItsOutputIsApplied) {
  Harness h(syntheticConfig());
  const std::vector<float> y1{5, 5, 5, 5}, y2{1000, 1000, 1000, 1000};
  auto r =
      Harness::result(0, {{1, Harness::message(1, 0, 1, net::v1::RoundMessage::KEYFRAME, y1)},
                          {2, Harness::message(2, 0, 1, net::v1::RoundMessage::KEYFRAME, y2)}});
  const auto heard = h.exchange->receive(r);
  PeerSetup setup;
  setup.config = syntheticConfig();
  setup.config.mixing.rule = robust::RuleId::kCwtm;
  setup.topology = completeGraph(3, 1);
  RoundMix mix(aggregatorFor(setup), *setup.topology, 0, kDim);
  RoundRecord record;
  NodeMetrics metrics;
  ASSERT_TRUE(mix.run(0, *h.exchange, heard, record, metrics).has_value());
  EXPECT_EQ(record.mixed, (std::vector<std::uint32_t>{1, 2}));
  EXPECT_EQ(metrics.peer_heard_total[2], 1u);
  // Per coordinate, the trimmed mean of {pivot (1..4), 5, 1000} with b = 1 is the 5: the model
  // (MoNNA, uncompressed) becomes it.
  EXPECT_EQ(std::vector<float>(h.learner.parameters().begin(), h.learner.parameters().end()), y1);
}

// A rule that scribbles over its output, then refuses (Aggregator::mix's contract allows both).
class ScribblingRule final : public robust::Aggregator {
 public:
  std::expected<robust::MixReport, std::string> mix(const robust::MixInput&,
                                                    std::span<float> out) override {
    std::fill(out.begin(), out.end(), -1.0f);
    return std::unexpected("refused");
  }
  std::string_view name() const override { return "scribbling"; }
  bool measuresEveryPair() const override { return false; }
};

// Uncompressed with γ = 1 the rule writes straight into the model (MoNNA's x = z, one copy a
// round fewer); anywhere apply() does more than copy, it writes to scratch.
TEST(RoundMix, TheRuleWritesIntoTheModelOnlyWhereApplyWouldCopyItThere) {
  Harness plain(syntheticConfig());
  plain.exchange->send(0, false);
  EXPECT_EQ(plain.exchange->mixTarget().data(), plain.learner.parameters().data());
  Config stepped = syntheticConfig();
  stepped.mixing.step = 0.5;
  Harness half(stepped);
  half.exchange->send(0, false);
  EXPECT_TRUE(half.exchange->mixTarget().empty());
  Harness compressed(topkHalf());
  compressed.exchange->send(0, false);
  EXPECT_TRUE(compressed.exchange->mixTarget().empty());
  Config gradients = syntheticConfig();
  gradients.exchange = Exchange::kGradient;
  Harness gradient(gradients);
  gradient.exchange->send(0, false);
  EXPECT_TRUE(gradient.exchange->mixTarget().empty());
}

// A rule that fails after using the model as its scratch leaves the model at the half step.
TEST(RoundMix, AFailedMixLeavesTheHalfStepEvenAfterTheRuleScribbledOnIt) {
  Harness h(syntheticConfig());
  h.exchange->send(0, false);
  const std::vector<float> half(h.learner.parameters().begin(), h.learner.parameters().end());
  ASSERT_FALSE(h.exchange->mixTarget().empty());
  const std::vector<float> y1{5, 5, 5, 5};
  auto r =
      Harness::result(0, {{1, Harness::message(1, 0, 1, net::v1::RoundMessage::KEYFRAME, y1)}});
  const auto heard = h.exchange->receive(r);
  RoundMix mix(std::make_unique<ScribblingRule>(), *h.setup.topology, 0, kDim);
  RoundRecord record;
  NodeMetrics metrics;
  const auto mixed = mix.run(0, *h.exchange, heard, record, metrics);
  ASSERT_FALSE(mixed.has_value());
  EXPECT_EQ(mixed.error(), "refused");
  EXPECT_EQ(std::vector<float>(h.learner.parameters().begin(), h.learner.parameters().end()), half);
}

constexpr std::string_view kRun = "exchange-test";

// Keys for peers 0..n-1, and the ring of their public keys.
struct TestKeys {
  explicit TestKeys(std::size_t n) : ring(std::make_shared<net::KeyRing>()) {
    for (std::uint32_t i = 0; i < n; ++i) {
      keys.push_back(net::SigningKey::generate());
      (*ring)[i] = keys.back().publicKey();
    }
  }
  void sign(net::v1::RoundMessage& m, std::span<const float> v) const {
    const net::Digest d = net::vectorDigest(v);
    m.set_digest(std::string(net::bytesOf(d)));
    m.set_signature(keys[m.sender()].sign(kRun, m.sender(), m.round(), d));
  }
  void sign(net::Received& m, std::span<const float> v) const {
    net::v1::RoundMessage header = m.header();
    sign(header, v);
    m = net::Received(std::move(header), m.sharedPayload());
  }
  std::vector<net::SigningKey> keys;
  std::shared_ptr<net::KeyRing> ring;
};

DigestGossip gossipOf(Harness& h, std::shared_ptr<const net::KeyRing> keys) {
  return DigestGossip({.self = h.setup.id,
                       .neighbours = h.neighbours,
                       .topology = *h.setup.topology,
                       .keys = std::move(keys),
                       .domain = std::string(kRun),
                       .exclude = true},
                      h.wire, h.metrics, h.rejections, *h.log);
}

// Peer 0 (neighbours 1 and 2) heard `y` from 1 in round 0; the round's messages.
net::RoundMessages hearFromOne(Harness& h, const std::vector<float>& y,
                               const TestKeys* keys = nullptr) {
  auto m = Harness::message(1, 0, 1, net::v1::RoundMessage::KEYFRAME, y);
  if (keys) keys->sign(m, y);
  auto heard = Harness::result(0, {{1, m}});
  h.exchange->receive(heard);
  return heard.messages;
}

// A report that `sender` signed `y` for round `t`, as `hops` edges away from it.
net::v1::RoundDigest reportOf(const TestKeys& keys, std::uint32_t sender,
                              const std::vector<float>& y, std::uint64_t t = 0,
                              std::uint32_t hops = 1) {
  net::v1::RoundDigest report;
  report.set_round(t);
  report.set_hops(hops);
  report.add_senders(sender);
  report.add_hashes(std::string(net::bytesOf(net::vectorDigest(y))));
  report.add_signatures(keys.keys[sender].sign(kRun, sender, t, net::vectorDigest(y)));
  return report;
}

TEST(DigestGossip, SignedStatementsGoOutAndTwoDifferentOnesConvictWithAProof) {
  Harness h(syntheticConfig());  // peer 0; neighbours 1 and 2, both live
  const TestKeys keys(3);
  DigestGossip digests = gossipOf(h, keys.ring);
  const std::vector<float> y1{1, 2, 3, 4};
  const auto messages = hearFromOne(h, y1, &keys);
  EXPECT_EQ(digests.screen(0, {1}, messages, *h.exchange, 0), (std::vector<std::uint32_t>{1}));
  auto& transport = h.transport;
  ASSERT_EQ(transport.envelopes.size(), 2u);  // to every live neighbour
  const net::v1::RoundDigest& sent = transport.envelopes[0].second.digest();
  EXPECT_EQ(sent.senders(0), 1u);
  EXPECT_EQ(sent.hashes(0), net::bytesOf(net::vectorDigest(y1)));
  EXPECT_EQ(sent.signatures(0), messages.at(1).signature());
  EXPECT_EQ(digests.detector().signaturesChecked(), 0u);
  // Neighbour 2 holds another vector that 1 signed for round 0: a proof, flooded.
  digests.take(2, reportOf(keys, 1, {4, 3, 2, 1}), 0);
  EXPECT_TRUE(digests.detector().convicted(1));
  ASSERT_EQ(transport.envelopes.size(), 4u);
  EXPECT_TRUE(transport.envelopes[2].second.digest().has_proof());
  EXPECT_EQ(transport.envelopes[2].second.digest().proof().sender(), 1u);
  EXPECT_TRUE(digests.screen(1, {1}, {}, *h.exchange, 1).empty());
  // A peer elsewhere convicts on the proof alone.
  Harness far(syntheticConfig(), 2);
  DigestGossip other = gossipOf(far, keys.ring);
  other.take(0, transport.envelopes[2].second.digest(), 0);
  EXPECT_TRUE(other.detector().convicted(1));
}

TEST(DigestGossip, AVectorWithoutItsStatementOrWithAnotherIsLeftOut) {
  Harness h(syntheticConfig());
  const TestKeys keys(3);
  DigestGossip digests = gossipOf(h, keys.ring);
  const auto unsigned_messages = hearFromOne(h, {1, 2, 3, 4});
  EXPECT_TRUE(digests.screen(0, {1}, unsigned_messages, *h.exchange, 0).empty());
  EXPECT_EQ(h.rejections[net::Refusal::kUnsigned], 1u);
  auto messages = hearFromOne(h, {1, 2, 3, 4}, &keys);
  keys.sign(messages.at(1), std::vector<float>{9, 9, 9, 9});  // signed, but another vector
  EXPECT_TRUE(digests.screen(0, {1}, messages, *h.exchange, 0).empty());
  EXPECT_EQ(h.rejections[net::Refusal::kStatementMismatch], 1u);
  EXPECT_FALSE(digests.detector().convicted(1));
}

TEST(DigestGossip, WithoutKeysNothingIsCheckedSentOrConvicted) {
  Harness h(syntheticConfig());
  const TestKeys keys(3);
  DigestGossip digests = gossipOf(h, nullptr);  // security: none
  const auto messages = hearFromOne(h, {1, 2, 3, 4});
  EXPECT_EQ(digests.screen(0, {1}, messages, *h.exchange, 0), (std::vector<std::uint32_t>{1}));
  EXPECT_TRUE(h.transport.envelopes.empty());
  digests.take(2, reportOf(keys, 1, {4, 3, 2, 1}), 0);
  EXPECT_FALSE(digests.detector().convicted(1));
}

TEST(DigestGossip, StatementsTravelAsFarAsTheSendersOtherNeighbourAndNoFurther) {
  // Ring of 6: peer 3's statements about peer 0 must get from 1 to 5 without passing 0, which
  // takes 4 edges. Peer 3 hears them 2 edges from 1 and relays; at 4 edges nobody relays.
  Harness h(syntheticConfig(), 3, 6, ringGraph(6, 1));
  const TestKeys keys(6);
  DigestGossip digests = gossipOf(h, keys.ring);
  digests.take(2, reportOf(keys, 0, {1, 2, 3, 4}, 0, /*hops=*/2), 0);
  ASSERT_EQ(h.transport.envelopes.size(), 1u);  // to 4 only, not back to 2
  EXPECT_EQ(h.transport.envelopes[0].first, 4u);
  EXPECT_EQ(h.transport.envelopes[0].second.digest().hops(), 3u);
  digests.take(2, reportOf(keys, 0, {1, 2, 3, 4}, 0, 2), 0);  // nothing new: not relayed again
  EXPECT_EQ(h.transport.envelopes.size(), 1u);
  digests.take(4, reportOf(keys, 0, {5, 6, 7, 8}, 0, /*hops=*/4), 0);
  EXPECT_TRUE(digests.detector().convicted(0));  // both sides met here
  for (std::size_t k = 1; k < h.transport.envelopes.size(); ++k)
    EXPECT_TRUE(h.transport.envelopes[k].second.digest().has_proof());  // only the proof
}

// A Byzantine neighbour's reports about peers that do not exist: each statement is counted and
// dropped, nothing is kept, relayed or thrown (their reach was a topology lookup that threw, and
// every made-up id took a slot until its round left the window); proofs likewise.
TEST(DigestGossip, StatementsAndProofsAboutUnknownPeersAreCountedAndDropped) {
  Harness h(syntheticConfig());  // peer 0 of complete-3
  const TestKeys keys(3);
  DigestGossip digests = gossipOf(h, keys.ring);
  net::v1::RoundDigest report = reportOf(keys, 1, {1, 2, 3, 4});
  for (std::uint32_t made_up : {3u, 1000u, 4294967295u}) {
    report.add_senders(made_up);
    report.add_hashes(report.hashes(0));
    report.add_signatures(report.signatures(0));
  }
  EXPECT_NO_THROW(digests.take(2, report, 0));
  EXPECT_EQ(h.rejections[net::Refusal::kUnknownSender], 3u);
  for (const auto& [to, envelope] : h.transport.envelopes) {
    for (const std::uint32_t sender : envelope.digest().senders()) EXPECT_EQ(sender, 1u) << to;
  }
  net::v1::RoundDigest proof;
  proof.set_round(0);
  proof.mutable_proof()->set_sender(77);
  proof.mutable_proof()->set_round(0);
  proof.mutable_proof()->set_digest_a(report.hashes(0));
  proof.mutable_proof()->set_signature_a(report.signatures(0));
  proof.mutable_proof()->set_digest_b(std::string(net::kDigestBytes, 'x'));
  proof.mutable_proof()->set_signature_b(report.signatures(0));
  EXPECT_NO_THROW(digests.take(2, proof, 0));
  EXPECT_EQ(h.rejections[net::Refusal::kUnknownSender], 4u);
  EXPECT_FALSE(digests.detector().convicted(77));
}

}  // namespace
}  // namespace phalanx::node
