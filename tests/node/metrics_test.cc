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
  m.train_loss = 0.5;
  m.peer_excluded_total = {{1, 3}, {7, 0}};
  m.messages_rejected_total = {{"frame_too_large", 2}};
  const std::string text = m.prometheus();
  EXPECT_THAT(text, HasSubstr("phalanx_round{node=\"4\"} 12\n"));
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

}  // namespace
}  // namespace phalanx::node
