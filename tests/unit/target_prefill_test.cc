// target::Prefill's options on a random tiny qwen3: keep_going stops a prefill between chunks
// (the chunks before stay committed), outputs left in backend buffers (taps_out chunk by chunk,
// logits_out) equal the host outputs bit for bit, and bad options and buffers are refused.
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "tests/unit/target_properties.h"
#include "tests/unit/target_random_model.h"

namespace twinspan::target {
namespace {

class PrefillOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TargetOptions options;
    options.backend = backend_.get();
    options.context = 128;
    model_ = testing::RandomQwen3Model(options, 31);
    ASSERT_NE(model_, nullptr);
    std::mt19937 rng(32);
    prompt_ = testing::RandomTokens(rng, 22, model_->config().vocab_size);
  }

  std::unique_ptr<backend::Backend> backend_ = cpu::NewCpuBackend(nullptr);
  std::unique_ptr<TargetModel> model_;
  std::vector<int32_t> prompt_;
};

TEST_F(PrefillOptionsTest, KeepGoingStopsBetweenChunks) {
  auto state = model_->NewSequence();
  ASSERT_TRUE(state.ok());
  PrefillOptions options;
  options.chunk_rows = 4;
  int asked = 0;
  options.keep_going = [&asked]() {
    return ++asked < 3 ? absl::OkStatus() : absl::DeadlineExceededError("request r: deadline");
  };
  absl::StatusOr<ForwardResult> result = Prefill(*model_, **state, prompt_, options);
  EXPECT_TRUE(absl::IsDeadlineExceeded(result.status())) << result.status();
  EXPECT_EQ(result.status().message(), "request r: deadline");
  EXPECT_EQ(asked, 3);                // Before chunks 1, 2 and 3; never before the first.
  EXPECT_EQ((*state)->length(), 12);  // Chunks 0, 1 and 2 stay committed.

  auto whole = model_->NewSequence();
  int calls = 0;
  options.keep_going = [&calls]() {
    ++calls;
    return absl::OkStatus();
  };
  ASSERT_TRUE(Prefill(*model_, **whole, prompt_, options).ok());
  EXPECT_EQ(calls, 5);  // 22 rows in chunks of 4: six chunks.
  EXPECT_EQ((*whole)->length(), 22);
}

TEST_F(PrefillOptionsTest, BufferOutputsEqualHostOutputs) {
  const std::vector<int64_t> taps = {0, 2};
  const int64_t width = 2 * model_->config().hidden_size, vocab = model_->config().vocab_size;
  auto host_state = model_->NewSequence();
  absl::StatusOr<ForwardResult> host = Prefill(*model_, **host_state, prompt_, 5, taps);
  ASSERT_TRUE(host.ok()) << host.status();

  auto state = model_->NewSequence();
  auto taps_out = backend_->AllocateFloats(5 * width);
  auto logits_out = backend_->AllocateFloats(vocab);
  ASSERT_TRUE(taps_out.ok() && logits_out.ok());
  std::vector<float> taps_seen(prompt_.size() * width, -1.0f);
  std::vector<int64_t> chunks;
  PrefillOptions options;
  options.chunk_rows = 5;
  options.tap_layer_ids = taps;
  options.taps_out = taps_out->get();
  options.logits_out = logits_out->get();
  options.on_taps = [&](int64_t first, int64_t rows) {
    chunks.push_back(rows);
    return backend_->Download(taps_seen.data() + first * width, **taps_out, 0,
                              rows * width * sizeof(float));
  };
  absl::StatusOr<ForwardResult> result = Prefill(*model_, **state, prompt_, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->taps.empty());
  EXPECT_TRUE(result->logits.empty());
  EXPECT_EQ(chunks, (std::vector<int64_t>{5, 5, 5, 5, 2}));
  EXPECT_TRUE(testing::SameBits(taps_seen.data(), host->taps.data(), host->taps.size()));
  std::vector<float> logits(vocab);
  ASSERT_TRUE(backend_->Download(logits.data(), **logits_out, 0, vocab * sizeof(float)).ok());
  EXPECT_TRUE(testing::SameBits(logits.data(), host->logits.data(), vocab));
}

TEST_F(PrefillOptionsTest, RefusesBadOptionsAndBuffers) {
  auto state = model_->NewSequence();
  auto small = backend_->AllocateFloats(3);
  ASSERT_TRUE(small.ok());
  PrefillOptions options;
  options.tap_layer_ids = {1};
  options.taps_out = small->get();  // No on_taps.
  EXPECT_TRUE(absl::IsInvalidArgument(Prefill(*model_, **state, prompt_, options).status()));
  options = PrefillOptions{};
  options.chunk_rows = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(Prefill(*model_, **state, prompt_, options).status()));
  EXPECT_EQ((*state)->length(), 0);

  ForwardRequest request;
  request.tokens = absl::MakeConstSpan(prompt_).subspan(0, 2);
  request.tap_layer_ids = {1};
  request.taps_out = small->get();
  absl::Status too_small = model_->CheckForward(**state, request);
  EXPECT_TRUE(absl::IsInvalidArgument(too_small)) << too_small;
  EXPECT_NE(too_small.message().find("taps_out"), std::string::npos) << too_small;
  request.taps_out = nullptr;
  request.logits_out_row = -1;
  EXPECT_TRUE(absl::IsInvalidArgument(model_->CheckForward(**state, request)));
  request.logits_out_row = 1;
  request.logits_out = small->get();
  absl::Status logits_small = model_->CheckForward(**state, request);
  EXPECT_NE(logits_small.message().find("logits_out"), std::string::npos) << logits_small;
}

}  // namespace
}  // namespace twinspan::target
