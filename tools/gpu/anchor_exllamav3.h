// exllamav3 v1.4.1's EXL3 kernels on one H200, default dispatch, median us per call
// (shared/reference/anchor-perf.md section 2, measured 2026-11-29): the numbers our bench prints
// beside its own.
#ifndef TWINSPAN_TOOLS_GPU_ANCHOR_EXLLAMAV3_H_
#define TWINSPAN_TOOLS_GPU_ANCHOR_EXLLAMAV3_H_

#include <cstdint>

namespace twinspan::gpu {

struct AnchorTime {
  int64_t k, n;
  int bits;
  double us[4];  // rows 1, 8, 16, 64
};

inline constexpr double kAnchorCopyGBs = 4276.0;
inline constexpr int kAnchorRows[4] = {1, 8, 16, 64};

inline constexpr AnchorTime kAnchorTimes[] = {
    {5120, 12288, 2, {30.2, 41.2, 44.8, 159.5}},
    {5120, 12288, 3, {30.2, 44.5, 46.6, 166.6}},
    {5120, 12288, 4, {30.5, 42.7, 44.0, 156.8}},
    {5120, 12288, 5, {28.5, 47.2, 51.8, 185.3}},
    {5120, 12288, 6, {33.9, 47.4, 52.0, 187.1}},
    {5120, 1024, 2, {14.3, 19.2, 25.3, 83.4}},
    {5120, 1024, 3, {14.6, 21.1, 24.7, 81.0}},
    {5120, 1024, 4, {17.6, 19.7, 25.1, 83.1}},
    {5120, 1024, 5, {12.8, 24.2, 25.3, 83.6}},
    {5120, 1024, 6, {18.1, 24.2, 25.4, 83.6}},
    {6144, 5120, 2, {22.2, 28.6, 35.2, 121.1}},
    {6144, 5120, 3, {23.8, 31.2, 35.4, 122.0}},
    {6144, 5120, 4, {24.5, 29.4, 35.2, 121.4}},
    {6144, 5120, 5, {23.2, 36.4, 37.3, 129.7}},
    {6144, 5120, 6, {28.8, 36.6, 37.4, 129.5}},
    {5120, 17408, 2, {35.1, 64.8, 54.9, 201.0}},
    {5120, 17408, 3, {35.0, 53.7, 57.0, 209.4}},
    {5120, 17408, 4, {35.3, 51.2, 54.9, 202.8}},
    {5120, 17408, 5, {37.0, 55.9, 59.9, 220.5}},
    {5120, 17408, 6, {45.0, 56.1, 59.7, 220.2}},
    {17408, 5120, 2, {37.9, 64.2, 64.4, 238.1}},
    {17408, 5120, 3, {39.8, 72.4, 68.2, 253.6}},
    {17408, 5120, 4, {42.0, 67.1, 63.8, 235.8}},
    {17408, 5120, 5, {40.1, 70.1, 75.1, 280.5}},
    {17408, 5120, 6, {47.9, 70.6, 75.4, 281.9}},
    {5120, 10240, 2, {30.1, 41.3, 41.6, 146.9}},
    {5120, 10240, 3, {30.6, 41.1, 43.8, 155.1}},
    {5120, 10240, 4, {31.2, 38.8, 40.9, 144.2}},
    {5120, 10240, 5, {28.0, 44.0, 48.0, 170.3}},
    {5120, 10240, 6, {33.1, 44.5, 48.5, 172.3}},
    {5120, 6144, 2, {22.3, 25.4, 34.0, 116.5}},
    {5120, 6144, 3, {23.1, 27.6, 34.1, 116.4}},
    {5120, 6144, 4, {23.8, 26.0, 33.8, 115.8}},
    {5120, 6144, 5, {23.3, 35.4, 36.0, 124.0}},
    {5120, 6144, 6, {28.4, 35.4, 35.9, 124.2}},
    {5120, 248320, 2, {367.7, 506.3, 534.6, 2122.2}},
    {5120, 248320, 3, {359.3, 548.7, 553.7, 2198.2}},
    {5120, 248320, 4, {314.1, 521.0, 526.2, 2088.4}},
    {5120, 248320, 5, {383.5, 581.3, 586.1, 2329.6}},
    {5120, 248320, 6, {473.0, 583.4, 584.3, 2333.2}},
};

// exllamav3's 401 linears of one 27B forward (K = 4 body, 6-bit head), measured as one stack.
inline constexpr double kAnchorStackMs1Row = 12.43;
inline constexpr double kAnchorStackMs8Rows = 17.30;
inline constexpr double kAnchorStackMs16Rows = 18.58;
// 64 rows: no stack measured; the sum of per-linear medians.
inline constexpr double kAnchorSumMs64Rows = 68.80;
// The whole head at K = 6 and its two-span (A + 64-block tail) and A + 384-tail pairs, us.
inline constexpr double kAnchorHeadFull[2] = {471.9, 588.2};  // rows 1, 16
inline constexpr double kAnchorHeadTwoSpan[2] = {255.1, 283.9};
inline constexpr double kAnchorHeadTail384[2] = {246.0, 266.6};

}  // namespace twinspan::gpu

#endif  // TWINSPAN_TOOLS_GPU_ANCHOR_EXLLAMAV3_H_
