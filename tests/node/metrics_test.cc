// Prometheus rendering of a node's metrics and the JSON line of a round.
#include "node/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "node/peer_node.h"

namespace phalanx::node {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Metrics, HistogramBucketsAreCumulativeWithSumAndCount) {
  Histogram h({0.1, 1.0});
  for (double v : {0.05, 0.1, 0.5, 3.0}) h.observe(v);
  const std::string text = h.render("round_seconds", "help", "node=\"2\"");
  EXPECT_THAT(text, HasSubstr("# TYPE phalanx_round_seconds histogram\n"));
  EXPECT_THAT(
      text,
      HasSubstr("phalanx_round_seconds_bucket{node=\"2\",le=\"0.1\"} 2\n"));  // le is inclusive
  EXPECT_THAT(text, HasSubstr("phalanx_round_seconds_bucket{node=\"2\",le=\"1\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("phalanx_round_seconds_bucket{node=\"2\",le=\"+Inf\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("phalanx_round_seconds_sum{node=\"2\"} 3.65\n"));
  EXPECT_THAT(text, HasSubstr("phalanx_round_seconds_count{node=\"2\"} 4\n"));
}

TEST(Metrics, PrometheusTextNamesEveryFamilyWithLabels) {
  NodeMetrics m;
  m.node = 4;
  m.round = 12;
  m.local_steps = 120;
  m.train_loss = 0.5;
  m.peer_excluded_total = {{1, 3}, {7, 0}};
  m.messages_rejected_total = {{"frame_too_large", 2}};
  const std::string text = m.prometheus();
  EXPECT_THAT(text, HasSubstr("phalanx_round{node=\"4\"} 12\n"));
  EXPECT_THAT(text, HasSubstr("phalanx_local_steps{node=\"4\"} 120\n"));
  EXPECT_THAT(text, HasSubstr("phalanx_train_loss{node=\"4\"} 0.5\n"));
  EXPECT_THAT(text, HasSubstr("phalanx_test_accuracy{node=\"4\"} NaN\n"));  // no evaluation yet
  EXPECT_THAT(text, HasSubstr("phalanx_peer_excluded_total{node=\"4\",peer=\"1\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("phalanx_peer_excluded_total{node=\"4\",peer=\"7\"} 0\n"));
  EXPECT_THAT(
      text,
      HasSubstr("phalanx_messages_rejected_total{node=\"4\",reason=\"frame_too_large\"} 2\n"));
  for (const char* family : {"bytes_sent_total", "bytes_received_total", "dense_bytes_total",
                             "deadline_misses_total", "peer_distance", "round_seconds"}) {
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE phalanx_") + family + " ")) << family;
  }
}

TEST(Metrics, RoundRecordJsonHasTheMetricNamesAndTestAccuracyOnlyWhenEvaluated) {
  RoundRecord r;
  r.round = 9;
  r.train_loss = 1.25;
  r.mixed = {1, 2};
  r.excluded = {2};
  r.bytes_sent_total = 100;
  r.dense_bytes_total = 4000;
  std::string json = roundRecordJson(3, r);
  EXPECT_THAT(json, HasSubstr("\"node\": 3, \"round\": 9, \"train_loss\": 1.25"));
  EXPECT_THAT(json, HasSubstr("\"mixed\": [1,2], \"excluded\": [2], \"missing\": []"));
  EXPECT_THAT(json, HasSubstr("\"bytes_sent_total\": 100"));
  EXPECT_THAT(json, Not(HasSubstr("test_accuracy")));
  r.test_accuracy = 0.75;
  r.learning_rate = std::nan("");
  json = roundRecordJson(3, r);
  EXPECT_THAT(json, HasSubstr("\"test_accuracy\": 0.75"));
  EXPECT_THAT(json, HasSubstr("\"learning_rate\": null"));
}

TEST(Metrics, RoundRecordRoundTripsThroughItsOneReader) {
  RoundRecord r;
  r.round = 41;
  r.train_loss = 0.5;
  r.learning_rate = 0.05;
  r.test_accuracy = 0.875;
  r.test_loss = 0.25;
  r.bytes_sent_total = 1u << 20;
  r.bytes_received_total = 3u << 20;
  r.dense_bytes_total = 5u << 20;
  r.bytes_uplink_total = 7;
  r.bytes_downlink_total = 11;
  r.local_steps = 420;
  r.mixed = {1, 2, 9};
  r.excluded = {9};
  r.missing = {4};
  r.equivocators = {7};
  r.attack_known = 3;
  r.attack_computed = true;
  r.coalition_short = true;
  r.deadline_hit = true;
  r.quorum_close = true;
  r.round_seconds = 0.125;
  // A script's own metrics, by name (the reader gives them in name order); a quote in a name
  // is escaped, not a broken line.
  r.test_metrics = {{"bits \"per\" char", 1.5}, {"perplexity", 12.25}};
  const auto back = parseRoundRecord(roundRecordJson(3, r));
  ASSERT_TRUE(back);
  EXPECT_EQ(roundRecordJson(3, *back), roundRecordJson(3, r));
  EXPECT_EQ(back->test_metrics, r.test_metrics);
  EXPECT_EQ(back->attack_known, 3u);
  EXPECT_TRUE(back->coalition_short);
  EXPECT_EQ(back->local_steps, 420u);
  EXPECT_EQ(back->bytes_downlink_total, 11u);
  // Unknowns are written as null and read back as unknown; no evaluation, no test fields.
  RoundRecord plain;
  plain.round = 2;
  const auto plain_back = parseRoundRecord(roundRecordJson(0, plain));
  ASSERT_TRUE(plain_back);
  EXPECT_TRUE(std::isnan(plain_back->train_loss));
  EXPECT_FALSE(plain_back->test_accuracy);
  EXPECT_FALSE(plain_back->attack_known);
  // Not records: a cut line, no round, a negative round, not an object.
  EXPECT_FALSE(parseRoundRecord("{\"node\": 3, \"round\": 4"));
  EXPECT_FALSE(parseRoundRecord("{\"node\": 3}"));
  EXPECT_FALSE(parseRoundRecord("{\"round\": -1}"));
  EXPECT_FALSE(parseRoundRecord("[1]"));
  // A field of the wrong type reads as absent; ids that are not ids are skipped.
  const auto odd = parseRoundRecord(R"({"round": 5, "train_loss": "x", "mixed": [1, -2, 2]})");
  ASSERT_TRUE(odd);
  EXPECT_TRUE(std::isnan(odd->train_loss));
  EXPECT_EQ(odd->mixed, (std::vector<std::uint32_t>{1, 2}));
}

}  // namespace
}  // namespace phalanx::node
