// The drafter service's options (the demo pair's drafter): values outside their range are refused
// with the flag's name; the defaults open the drafter on every hardware thread.
#include "services/drafter/server/drafter_adapter.h"

#include <string>

#include "gtest/gtest.h"

namespace twinspan::serving {
namespace {

DrafterAdapterOptions DemoOptions() {
  DrafterAdapterOptions o;
  o.drafter_dir = std::string(TWINSPAN_DEMO_DIR) + "/drafter";
  o.target_dir = std::string(TWINSPAN_DEMO_DIR) + "/target";
  o.context = 256;
  return o;
}

void ExpectRefused(const DrafterAdapterOptions& o, const std::string& flag) {
  auto model = OpenDrafterAdapter(o);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find(flag), std::string::npos) << model.status();
}

TEST(DrafterAdapterTest, RefusesOptionsOutsideTheirRange) {
  DrafterAdapterOptions o = DemoOptions();
  o.threads = -1;
  ExpectRefused(o, "--threads -1");
  o = DemoOptions();
  o.drafter_bits = 8;
  ExpectRefused(o, "--drafter-bits 8");
  o = DemoOptions();
  o.tree_nodes = 128;
  ExpectRefused(o, "--draft-tree-nodes 128");
  o = DemoOptions();
  o.device = "gpu0";
  ExpectRefused(o, "--device");
}

// The draft and the target's verify take turns, so one drafter thread would leave cores idle.
TEST(DrafterAdapterTest, DefaultThreadsAreTheMachines) {
  EXPECT_EQ(DemoOptions().threads, 0);
  auto model = OpenDrafterAdapter(DemoOptions());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->info().block_size, 16);
}

}  // namespace
}  // namespace twinspan::serving
