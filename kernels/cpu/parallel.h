// A small fixed-size thread pool with a blocking parallel-for, for the CPU reference backend.
//
// Row-invariance: ParallelFor hands out whole indices. Callers make each index an independent
// output (a column block, a (row, head) pair) whose reduction order never depends on which thread
// ran it or on how many threads exist, so results are bit-identical for any thread count.
#ifndef TWINSPAN_KERNELS_CPU_PARALLEL_H_
#define TWINSPAN_KERNELS_CPU_PARALLEL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace twinspan::cpu {

// Thread-safe: any number of threads may call ParallelFor; calls are serialized internally (one
// job at a time), and the calling thread works on its own job too. Workers and the caller spin
// (yielding) for kSpinMicros before sleeping: a forward is a chain of jobs of tens of microseconds,
// and a sleep and a futex wake per job would cost as much as the work.
class ThreadPool {
 public:
  // `num_threads` counts the caller: 1 (or less) runs everything inline, no threads are started.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  static constexpr int64_t kSpinMicros = 100;

  // Calls fn(begin, end) over [0, n) cut into consecutive ranges of at most `grain` indices (one
  // call of the whole range when the pool has no workers), and returns when all have run.
  // REQUIRES: fn does not call ParallelFor on this pool.
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void WorkerLoop();
  void RunChunks();

  std::vector<std::thread> workers_;
  std::mutex job_mu_;  // Serializes whole jobs so concurrent callers never mix chunks.

  std::mutex mu_;  // Guards the job fields below.
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t grain_ = 1;
  int64_t next_ = 0;  // Next unclaimed index.
  // Written under mu_; atomic so that spinning threads may read them without it.
  std::atomic<int64_t> outstanding_ = 0;  // Indices claimed or unclaimed but not finished.
  std::atomic<uint64_t> generation_ = 0;  // Bumped per job so workers notice new work.
  std::atomic<bool> stop_ = false;
};

// The services' --threads: `requested` when positive, else the machine's hardware threads (>= 1).
int ThreadCount(int requested);

// Runs fn over [0, n) on `pool`, or inline when pool is null.
void ParallelFor(ThreadPool* pool, int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)>& fn);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_PARALLEL_H_
