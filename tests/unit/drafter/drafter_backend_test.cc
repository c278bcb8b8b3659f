// The drafter on backend::Backend: the backend's SelectorWalk equals the CPU op, a drafter on a
// backend it is given equals one on its own, long appends cut into scratch-sized steps change no
// bit, concurrent streams equal serial ones, and the scratch's row limit is enforced. The golden
// DFlash2 tiny drafter (golden/README.md section 8) over the golden Qwen3 tiny target's head.
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/candidate_selector.h"
#include "kernels/cpu/cpu_backend.h"
#include "services/drafter/drafter.h"
#include "tests/testing/golden.h"

namespace twinspan::drafter {
namespace {

std::vector<float> Normal(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

template <typename T>
std::unique_ptr<backend::Buffer> Put(backend::Backend& b, const std::vector<T>& host) {
  auto buffer = b.Allocate(host.size() * sizeof(T));
  EXPECT_TRUE(buffer.ok());
  EXPECT_TRUE(b.Upload(**buffer, 0, host.data(), host.size() * sizeof(T)).ok());
  return *std::move(buffer);
}

template <typename T>
std::span<T> View(const std::unique_ptr<backend::Buffer>& b, size_t n) {
  return {static_cast<T*>(b->data()), n};
}

TEST(DrafterBackendTest, SelectorWalkEqualsTheCpuOp) {
  const int64_t slots = 5, k = 4, rank = 8, vocab = 50;
  std::vector<int32_t> ids(slots * k);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((7 * i + 3) % vocab);
  const std::vector<float> unary = Normal(slots * k, 1), hp = Normal(slots * rank, 2);
  const std::vector<float> pred = Normal(vocab * rank, 3), succ = Normal(vocab * rank, 4);
  const std::vector<float> uniforms = {0.1f, 0.5f, 0.9f, 0.3f, 0.7f};
  const auto book = [&](const void* data) {
    return cpu::CodebookView{cpu::CodebookType::kF32, static_cast<const std::byte*>(data), vocab,
                             rank};
  };
  const std::unique_ptr<backend::Backend> b = cpu::NewCpuBackend(nullptr);
  const auto d_ids = Put(*b, ids), d_unary = Put(*b, unary), d_hp = Put(*b, hp);
  const auto d_pred = Put(*b, pred), d_succ = Put(*b, succ), d_u = Put(*b, uniforms);
  const auto d_out = Put(*b, std::vector<int32_t>(slots));
  const auto d_scores = Put(*b, std::vector<float>(slots * k));
  const auto d_probs = Put(*b, std::vector<float>(slots * k));
  for (const float temperature : {0.0f, 0.7f}) {
    const size_t nu = temperature > 0 ? slots : 0, np = temperature > 0 ? slots * k : 0;
    const cpu::SelectorWalkParams params{
        .slots = slots, .top_k = k, .rank = rank, .anchor_id = 11, .temperature = temperature};
    std::vector<int32_t> want_ids(slots);
    std::vector<float> want_scores(slots * k), want_probs(np);
    ASSERT_TRUE(cpu::SelectorWalk({},
                                  {.candidate_ids = ids,
                                   .unary = unary,
                                   .hidden_projection = hp,
                                   .predecessor = book(pred.data()),
                                   .successor = book(succ.data()),
                                   .uniforms = std::span(uniforms).first(nu)},
                                  {want_ids, want_scores, want_probs}, params)
                    .ok());
    const cpu::SelectorWalkInputs in{.candidate_ids = View<const int32_t>(d_ids, ids.size()),
                                     .unary = View<const float>(d_unary, unary.size()),
                                     .hidden_projection = View<const float>(d_hp, hp.size()),
                                     .predecessor = book(d_pred->data()),
                                     .successor = book(d_succ->data()),
                                     .uniforms = View<const float>(d_u, nu)};
    ASSERT_TRUE(b->SelectorWalk(in,
                                {View<int32_t>(d_out, slots), View<float>(d_scores, slots * k),
                                 View<float>(d_probs, np)},
                                params)
                    .ok());
    std::vector<int32_t> got_ids(slots);
    std::vector<float> got_scores(slots * k), got_probs(np);
    ASSERT_TRUE(b->Download(got_ids.data(), *d_out, 0, slots * 4).ok());
    ASSERT_TRUE(b->Download(got_scores.data(), *d_scores, 0, slots * k * 4).ok());
    ASSERT_TRUE(b->Download(got_probs.data(), *d_probs, 0, np * 4).ok());
    EXPECT_EQ(got_ids, want_ids);
    EXPECT_EQ(std::memcmp(got_scores.data(), want_scores.data(), slots * k * 4), 0);
    EXPECT_EQ(got_probs, want_probs);
    // Host memory is not the backend's: refused, naming the argument.
    cpu::SelectorWalkInputs stray = in;
    stray.successor = book(succ.data());
    const absl::Status s = b->SelectorWalk(
        stray, {View<int32_t>(d_out, slots), View<float>(d_scores, slots * k), {}}, params);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("successor"), std::string::npos) << s;
  }
}

class DrafterOnBackendTest : public ::testing::Test {
 protected:
  absl::StatusOr<std::unique_ptr<Drafter>> Open(backend::Backend* b, int64_t context = 256) {
    return Drafter::Open(testing::GoldenPath("dflash2_drafter_tiny/model"),
                         testing::GoldenPath("hf_qwen3_tiny/model"),
                         {.model = {.backend = b, .context = context}, .head = "full"});
  }
  // Appends `rows` random raw tap rows in steps of `step` and proposes after token 42.
  Proposal Round(const Drafter& d, int64_t rows, int64_t step, uint32_t seed) {
    const int64_t width = d.config().num_taps() * d.config().hidden_size;
    const std::vector<float> taps = Normal(rows * width, seed);
    auto stream = d.NewStream();
    EXPECT_TRUE(stream.ok()) << stream.status();
    for (int64_t r = 0; r < rows; r += step) {
      const int64_t n = std::min(step, rows - r);
      const absl::Status s = d.AppendTaps(
          **stream, TapForm::kRaw, std::span<const float>(taps).subspan(r * width, n * width), n);
      EXPECT_TRUE(s.ok()) << s;
    }
    auto p =
        d.Propose(**stream, 42,
                  {.temperature = 0.5f, .walk_seed = 3, .walk_uniforms = {}, .want_logits = true});
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *std::move(p) : Proposal{};
  }
};

void ExpectSame(const Proposal& a, const Proposal& b) {
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.candidate_ids, b.candidate_ids);
  ASSERT_EQ(a.logits.size(), b.logits.size());
  EXPECT_EQ(std::memcmp(a.logits.data(), b.logits.data(), a.logits.size() * 4), 0);
  EXPECT_EQ(a.probabilities, b.probabilities);
}

TEST_F(DrafterOnBackendTest, AGivenBackendEqualsAnOwnedOne) {
  cpu::ThreadPool pool(3);
  const std::unique_ptr<backend::Backend> b = cpu::NewCpuBackend(&pool);
  auto both = DrafterModel::Open(testing::GoldenPath("dflash2_drafter_tiny/model"),
                                 {.backend = b.get(), .pool = &pool});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("pool"), std::string::npos) << both.status();
  auto given = Open(b.get());
  auto owned = Open(nullptr);
  ASSERT_TRUE(given.ok() && owned.ok());
  EXPECT_EQ(&(*given)->model().backend(), b.get());
  ExpectSame(Round(**given, 9, 9, 1), Round(**owned, 9, 9, 1));
}

// 150 rows go through the 64-row scratch in three steps: the same bits as one row at a time.
TEST_F(DrafterOnBackendTest, LongAppendsEqualRowByRowAppends) {
  auto d = Open(nullptr);
  ASSERT_TRUE(d.ok()) << d.status();
  ExpectSame(Round(**d, 150, 150, 2), Round(**d, 150, 1, 2));
}

TEST_F(DrafterOnBackendTest, ConcurrentStreamsEqualSerialOnes) {
  cpu::ThreadPool pool(2);
  const std::unique_ptr<backend::Backend> b = cpu::NewCpuBackend(&pool);
  auto d = Open(b.get());
  ASSERT_TRUE(d.ok()) << d.status();
  std::vector<Proposal> serial(4), concurrent(4);
  for (int i = 0; i < 4; ++i) serial[i] = Round(**d, 5 + i, 2, 10 + i);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { concurrent[i] = Round(**d, 5 + i, 2, 10 + i); });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 4; ++i) ExpectSame(serial[i], concurrent[i]);
}

TEST_F(DrafterOnBackendTest, BlocksPastTheScratchAreRefused) {
  auto d = Open(nullptr, 512);
  ASSERT_TRUE(d.ok()) << d.status();
  auto stream = (*d)->NewStream();
  ASSERT_TRUE(stream.ok());
  const int64_t h = (*d)->config().hidden_size;
  std::vector<float> x(65 * h, 0.5f), y(65 * h);
  const absl::Status s = (*d)->model().ForwardBlock(**stream, x.data(), kScratchRows + 1, y.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE((*d)->model().ForwardBlock(**stream, x.data(), kScratchRows, y.data()).ok());
  EXPECT_EQ((*d)->model().ForwardBlock(**stream, x.data(), 0, y.data()).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinspan::drafter
