#include "kernels/cuda/exl3_relayout.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "kernels/cuda/exl3_layout.h"

namespace twinspan::cuda {

std::unique_ptr<uint32_t[]> RelayoutExl3(const exl3::Weight& w, int threads) {
  constexpr int64_t kBlockColumns = 128;
  const int64_t blocks = w.n() / kBlockColumns, block_words = Exl3BlockWords(w.k(), w.bits());
  // Not value-initialized: every word is written, and zeroing 1 GB first would cost a pass.
  std::unique_ptr<uint32_t[]> out(new uint32_t[static_cast<size_t>(blocks * block_words)]);
  const auto relayout = [&](int64_t first, int64_t last) {
    if (first >= last) return;
    ToExl3DeviceLayout(w.tile(0, first * kBlockColumns / 16), w.tile_row_stride(), w.k(),
                       (last - first) * kBlockColumns, w.bits(), out.get() + first * block_words);
  };
  const int64_t workers = std::clamp<int64_t>(threads, 1, blocks);
  if (workers == 1) {
    relayout(0, blocks);
    return out;
  }
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < workers; ++t) {
    pool.emplace_back(relayout, blocks * t / workers, blocks * (t + 1) / workers);
  }
  for (std::thread& thread : pool) thread.join();
  return out;
}

}  // namespace twinspan::cuda
