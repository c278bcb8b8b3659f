// Router configuration parsing and the sticky weighted pool choice.
#include "services/router/router_config.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "services/router/router_backend.h"

namespace twinspan::router {
namespace {

TEST(RouterConfigTest, ParsesPoolsLaunchesAndDefaults) {
  absl::StatusOr<RouterConfig> c = ParseRouterConfig(R"({
    "listen": "127.0.0.1:1", "health_interval_ms": 250, "max_retries": 2,
    "pools": [
      {"variant": "two-span", "weight": 3, "workers": ["a:1", "b:2"],
       "launch": [{"binary": "twinspan-target", "gpu": "1", "args": ["--x", "y"]}]},
      {"variant": "none", "workers": ["c:3"]}]})",
                                                     "test.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->listen, "127.0.0.1:1");
  EXPECT_EQ(c->health_interval, absl::Milliseconds(250));
  EXPECT_EQ(c->max_retries, 2);
  ASSERT_EQ(c->pools.size(), 2u);
  EXPECT_EQ(c->pools[0].weight, 3);
  EXPECT_EQ(c->pools[0].workers.size(), 2u);
  ASSERT_EQ(c->pools[0].launch.size(), 1u);
  EXPECT_EQ(c->pools[0].launch[0].gpu, "1");
  EXPECT_EQ(c->pools[0].launch[0].name, "twinspan-target");
  EXPECT_EQ(c->pools[1].weight, 1.0);
}

// A worker placed on a GPU sees it as cuda:0 (CUDA_VISIBLE_DEVICES): without a --device it gets
// --device cuda:0, and a --device of another ordinal, or cpu, is refused naming both.
TEST(RouterConfigTest, PlacementAndDeviceFlagsAgree) {
  absl::StatusOr<RouterConfig> c = ParseRouterConfig(R"({"pools": [{"variant": "a",
      "workers": ["x:1"], "launch": [
        {"binary": "twinspan-drafter", "gpu": "3"},
        {"binary": "twinspan-target", "gpu": "2,3", "args": ["--device", "cuda:1"]},
        {"binary": "twinspan-target", "gpu": "1", "args": ["--device=cuda:0",
                                                           "--drafter-device=cuda:0"]},
        {"binary": "twinspan-target", "args": ["--device", "cpu"]}]}]})",
                                                     "placed.json");
  ASSERT_TRUE(c.ok()) << c.status();
  const std::vector<LaunchSpec>& l = c->pools[0].launch;
  EXPECT_EQ(l[0].args, (std::vector<std::string>{"--device", "cuda:0"}));
  EXPECT_EQ(l[1].args, (std::vector<std::string>{"--device", "cuda:1"}));
  EXPECT_EQ(l[2].args, (std::vector<std::string>{"--device=cuda:0", "--drafter-device=cuda:0"}));
  EXPECT_EQ(l[3].args, (std::vector<std::string>{"--device", "cpu"}));  // No gpu: untouched.

  const std::pair<const char*, const char*> refused[] = {
      {R"({"binary": "t", "gpu": "1", "args": ["--device", "cuda:1"]})", "--device cuda:1"},
      {R"({"binary": "t", "gpu": "0", "args": ["--device", "cpu"]})", "--device cpu"},
      {R"({"binary": "t", "gpu": "0", "args": ["--drafter-device=cuda:2"]})",
       "--drafter-device cuda:2"},
      {R"({"binary": "t", "gpu": "0,1", "args": ["--device", "cuda:x"]})", "cuda:0 .. cuda:1"},
  };
  for (const auto& [launch, want] : refused) {
    const std::string text = absl::StrCat(
        R"({"pools": [{"variant": "a", "workers": ["x:1"], "launch": [)", launch, "]}]}");
    absl::StatusOr<RouterConfig> bad = ParseRouterConfig(text, "placed.json");
    ASSERT_FALSE(bad.ok()) << launch;
    EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
    EXPECT_NE(bad.status().message().find(want), std::string::npos) << bad.status();
    EXPECT_NE(bad.status().message().find("\"gpu\""), std::string::npos) << bad.status();
  }
}

TEST(RouterConfigTest, RefusesMalformedConfigsNamingTheProblem) {
  const std::pair<const char*, const char*> cases[] = {
      {"[]", "not a JSON object"},
      {"{}", "\"pools\""},
      {R"({"pools": [{"variant": "a", "workers": ["x:1"]}, {"variant": "a", "workers": ["y:1"]}]})",
       "appears twice"},
      {R"({"pools": [{"variant": "a", "weight": 0, "workers": ["x:1"]}]})", "weight"},
      {R"({"pools": [{"variant": "a", "workers": []}]})", "workers"},
      {R"({"pools": [{"workers": ["x:1"]}]})", "variant"},
      {R"({"max_retries": 99, "pools": [{"variant": "a", "workers": ["x:1"]}]})", "max_retries"},
      {R"({"pools": [{"variant": "a", "workers": ["x:1"], "launch": [{"args": []}]}]})", "binary"},
      {R"({"pools": [{"variant": "a", "workers": ["x:1"], "launch": [{"binary": "bin/"}]}]})",
       "\"bin/\" names a folder"},
      {"{not json", "not a JSON object"},
  };
  for (const auto& [text, want] : cases) {
    absl::StatusOr<RouterConfig> c = ParseRouterConfig(text, "bad.json");
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_TRUE(absl::IsInvalidArgument(c.status())) << c.status();
    EXPECT_NE(c.status().message().find(want), std::string::npos) << c.status() << " / " << want;
    EXPECT_NE(c.status().message().find("bad.json"), std::string::npos) << c.status();
  }
}

TEST(PickPoolTest, StickyPerSessionAndWeighted) {
  const std::vector<double> weights = {1, 3};
  std::map<int, int> counts;
  for (int s = 0; s < 4000; ++s) {
    const std::string key = "session-" + std::to_string(s);
    const int pool = PickPool(weights, key, 0.0);
    EXPECT_EQ(pool, PickPool(weights, key, 0.99)) << key;  // the key decides, not the draw
    counts[pool]++;
  }
  EXPECT_NEAR(counts[1] / 4000.0, 0.75, 0.03);
  // Without a key the uniform draw decides.
  EXPECT_EQ(PickPool(weights, "", 0.10), 0);
  EXPECT_EQ(PickPool(weights, "", 0.30), 1);
}

}  // namespace
}  // namespace twinspan::router
