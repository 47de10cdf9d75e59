// The metrics and control endpoint (node/http_endpoint.h) over real HTTP: metrics for anyone,
// the model and control behind the token.
#include "node/http_endpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

// Last: it pulls in <resolv.h>, whose _res macro breaks Eigen's headers.
#include <httplib.h>

namespace phalanx::node {
namespace {

TEST(HttpEndpoint, ServesMetricsModelAndGuardsControl) {
  std::vector<std::string> applied;
  const std::vector<float> model{1.5f, -2.0f};
  HttpEndpoint http("127.0.0.1", 0, [&] { return std::optional<std::vector<float>>(model); },
                    {.token = "s3cret", .apply = [&](const FaultCommand& command) -> ControlAnswer {
                       if (std::holds_alternative<fault::Hang>(command))  // the loop did not answer
                         return {.outcome = FaultOutcome::kNotAnswered};
                       if (std::holds_alternative<fault::SwitchAttack>(command))
                         return {.outcome = FaultOutcome::kRefused, .reason = "no attack here"};
                       applied.push_back(faultText(command));
                       return {};
                     }});
  http.publish("phalanx_round{node=\"0\"} 3\n");
  httplib::Client client("127.0.0.1", http.port());
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->body, "phalanx_round{node=\"0\"} 3\n");
  EXPECT_EQ(client.Get("/model")->status, 401);  // the model needs the token
  EXPECT_EQ(client.Get("/model", httplib::Headers{{"Authorization", "Bearer nope"}})->status, 401);
  // As long as the token, or its prefix: refused all the same (compared in constant time).
  for (const char* guess : {"Bearer s3creX", "Bearer s3cre", "Bearer s3cret0"})
    EXPECT_EQ(client.Get("/model", httplib::Headers{{"Authorization", guess}})->status, 401);
  auto npy = client.Get("/model", httplib::Headers{{"Authorization", "Bearer s3cret"}});
  ASSERT_TRUE(npy);
  EXPECT_EQ(npy->status, 200);
  EXPECT_EQ(npy->body.substr(1, 5), "NUMPY");
  EXPECT_EQ(npy->body.size() % 16, 8u);  // 16-aligned header, then two floats
  EXPECT_EQ(client.Post("/control", "slow 10", "text/plain")->status, 401);
  httplib::Headers auth{{"Authorization", "Bearer s3cret"}};
  EXPECT_EQ(client
                .Post("/control", httplib::Headers{{"Authorization", "Bearer nope"}}, "slow 10",
                      "text/plain")
                ->status,
            401);
  EXPECT_EQ(client.Post("/control", auth, "bad", "text/plain")->status, 400);  // does not parse
  const auto refused = client.Post("/control", auth, "attack alie", "text/plain");
  EXPECT_EQ(refused->status, 400);  // parsed, refused by the node: the reason comes back
  EXPECT_EQ(refused->body, "no attack here\n");
  EXPECT_EQ(client.Post("/control", auth, "hang 3", "text/plain")->status, 504);  // not "applied"
  EXPECT_EQ(client.Post("/control", auth, "slow 10", "text/plain")->status, 200);
  EXPECT_EQ(applied, std::vector<std::string>{"slow 10"});
  HttpEndpoint closed("127.0.0.1", 0, {});
  httplib::Client other("127.0.0.1", closed.port());
  EXPECT_EQ(other.Post("/control", auth, "slow 10", "text/plain")->status, 404);
}

}  // namespace
}  // namespace phalanx::node

namespace phalanx::node {
namespace {}  // namespace
}  // namespace phalanx::node
