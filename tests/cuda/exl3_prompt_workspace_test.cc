// Host tests of the EXL3 prompt path's workspace contract (kernels/cuda/exl3_linear.cuh): the
// fragments' bytes in Exl3LinearWorkspaceBytes above 64 rows (the whole weight, or one slab of at
// most 256 MiB for the 27B head) and the errors Exl3Linear returns before it touches the device.
// They need no GPU: sizing and validation are host code, so they run under ctest.
#include <cstdint>

#include "common/exl3/plan.h"
#include "gtest/gtest.h"
#include "kernels/cuda/exl3_linear.cuh"

namespace twinspan::cuda {
namespace {

// A view that is never dereferenced: the host code only checks its pointers' alignment.
Exl3DeviceWeight FakeWeight(int64_t k, int64_t n, int bits) {
  Exl3DeviceWeight w;
  w.trellis = reinterpret_cast<const uint32_t*>(uintptr_t{1} << 20);
  w.suh = reinterpret_cast<const __half*>(uintptr_t{2} << 20);
  w.svh = reinterpret_cast<const __half*>(uintptr_t{3} << 20);
  w.k = k;
  w.n = n;
  w.bits = bits;
  const exl3::Plan p = exl3::plan(k, n);
  w.k_splits = p.k_splits;
  w.warps = p.warps;
  return w;
}

TEST(Exl3PromptWorkspace, HoldsTheWholeWeightsFragmentsUpTo256MiB) {
  struct Case {
    int64_t k, n, slab_blocks;
  };
  // The 27B's shapes: every body linear in one slab (the widest, 5120 x 17408, is 178 MB), the
  // head in slabs of 204 blocks of 1.31 MB.
  for (const Case c : {Case{5120, 12288, 96}, Case{5120, 1024, 8}, Case{6144, 5120, 40},
                       Case{5120, 17408, 136}, Case{17408, 5120, 40}, Case{5120, 10240, 80},
                       Case{5120, 6144, 48}, Case{5120, 248320, 204}, Case{256, 128, 1}}) {
    const Exl3DeviceWeight w = FakeWeight(c.k, c.n, 4);
    const size_t at64 = Exl3LinearWorkspaceBytes(w, 64), at65 = Exl3LinearWorkspaceBytes(w, 65);
    const size_t fragments = static_cast<size_t>(c.slab_blocks) * c.k * 256;
    ASSERT_GT(at64, 0u);
    EXPECT_GE(at65, at64 + fragments) << c.k << " x " << c.n;
    EXPECT_LT(at65, at64 + fragments + 256) << c.k << " x " << c.n;  // Alignment only.
    EXPECT_EQ(Exl3LinearWorkspaceBytes(w, 4096), at65);              // Per slab, not per row.
    EXPECT_LE(fragments, size_t{256} << 20);
  }
}

TEST(Exl3PromptWorkspace, RejectsBadViewsAndSmallWorkspacesBeforeTheDevice) {
  const Exl3DeviceWeight w = FakeWeight(512, 384, 3);
  Exl3DeviceWeight bad = w;
  bad.k_splits = 3;
  EXPECT_EQ(Exl3LinearWorkspaceBytes(bad, 100), 0u);
  const auto* x = reinterpret_cast<const float*>(uintptr_t{4} << 20);
  auto* y = reinterpret_cast<float*>(uintptr_t{5} << 20);
  Context ctx;
  ctx.workspace = reinterpret_cast<void*>(uintptr_t{6} << 20);
  ctx.workspace_bytes = Exl3LinearWorkspaceBytes(w, 64) - 1;  // No room even for 64-row launches.
  EXPECT_EQ(Exl3Linear(ctx, x, w.k, 100, w, y, w.n).code(), absl::StatusCode::kResourceExhausted);
  ctx.exl3_prompt = -1;
  EXPECT_EQ(Exl3Linear(ctx, x, w.k, 100, w, y, w.n).code(), absl::StatusCode::kResourceExhausted);
  ctx.exl3_prompt = 0;
  Context none;
  EXPECT_EQ(Exl3Linear(none, x, w.k, 100, w, y, w.n).code(), absl::StatusCode::kResourceExhausted);
  ctx.workspace_bytes = Exl3LinearWorkspaceBytes(w, 100);
  EXPECT_EQ(Exl3Linear(ctx, x, w.k, 100, bad, y, w.n).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Exl3Linear(ctx, x, w.k, 100, w, y + 2, w.n).code(),
            absl::StatusCode::kInvalidArgument);  // y not 16-byte aligned.
  EXPECT_EQ(Exl3Linear(ctx, x, w.k, -1, w, y, w.n).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinspan::cuda
