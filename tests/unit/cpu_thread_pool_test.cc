// cpu::ThreadPool: every index runs once, from workers that spin between jobs or have gone to
// sleep, with callers on several threads, and a pool torn down while its workers spin; ThreadCount.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/parallel.h"

namespace twinspan::cpu {
namespace {

// Runs one job of n indices and checks each ran exactly once.
void ExpectEachIndexOnce(ThreadPool& pool, int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
  pool.ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
    if (pool.num_threads() > 1) ASSERT_LE(end - begin, grain);
    for (int64_t i = begin; i < end; ++i) runs[static_cast<size_t>(i)].fetch_add(1);
  });
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(runs[static_cast<size_t>(i)].load(), 1) << "index " << i;
}

TEST(ThreadPoolTest, EveryIndexRunsOnceForAnyThreadCountAndGrain) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int64_t n : {1, 7, 64, 1000}) {
      for (int64_t grain : {1, 3, 64}) ExpectEachIndexOnce(pool, n, grain);
    }
  }
}

TEST(ThreadPoolTest, WorkersThatWentToSleepWakeForTheNextJob) {
  ThreadPool pool(3);
  const auto idle = std::chrono::microseconds(ThreadPool::kSpinMicros * 20);
  for (int job = 0; job < 5; ++job) {
    std::this_thread::sleep_for(idle);
    std::atomic<int64_t> sum = 0;
    pool.ParallelFor(300, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sum += i;
    });
    EXPECT_EQ(sum.load(), 300 * 299 / 2);
  }
}

TEST(ThreadPoolTest, ConcurrentCallersEachGetTheirWholeJob) {
  ThreadPool pool(2);
  std::vector<std::thread> callers;
  callers.reserve(4);
  std::atomic<int> failures = 0;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&, c] {
      for (int job = 0; job < 200; ++job) {
        const int64_t n = 10 + (c * 7 + job) % 50;
        std::atomic<int64_t> sum = 0;
        pool.ParallelFor(n, 2, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) sum += i + 1;
        });
        if (sum.load() != n * (n + 1) / 2) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ThreadPoolTest, DestroyedRightAfterAJobWhileWorkersSpin) {
  for (int round = 0; round < 50; ++round) {
    ThreadPool pool(4);
    ExpectEachIndexOnce(pool, 100, 1);
  }
}

// The services' --threads 0 means every hardware thread; a positive count is taken as given.
TEST(ThreadPoolTest, ThreadCountOfZeroIsTheMachines) {
  EXPECT_EQ(ThreadCount(0), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  EXPECT_EQ(ThreadCount(3), 3);
}

}  // namespace
}  // namespace twinspan::cpu
