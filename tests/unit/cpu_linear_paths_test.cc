// cpu::Linear's dense path on each instruction set against Dot (kernels/cpu/dot.h), bit for bit:
// lengths with and without a tail, rows 1 to 9 and 16, odd and even column counts, pool sizes.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/dot.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/parallel.h"
#include "tests/unit/formats_exl3_fixture.h"

namespace twinspan::cpu {
namespace {

TEST(LinearPathsTest, DenseColumnsAreDotOnEveryInstructionSet) {
  const std::vector<Isa> isas = RunnableIsas();
  ThreadPool pool(2);
  uint32_t seed = 1;
  for (int64_t k : {1, 7, 8, 13, 40, 384, 1023}) {
    for (int64_t n : {1, 5, 48, 130}) {
      const std::vector<float> values = testing::RandomRows(n, k, ++seed);
      absl::StatusOr<LinearWeight> w = LinearWeight::Dense(n, k, values);
      ASSERT_TRUE(w.ok());
      for (int64_t rows : {1, 2, 3, 4, 5, 9, 16}) {
        const int64_t x_stride = k + 3, y_stride = n + 2;
        const std::vector<float> x = testing::RandomRows(rows, x_stride, ++seed);
        std::vector<float> want(rows * y_stride, -1.0f);
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t j = 0; j < n; ++j) {
            want[r * y_stride + j] = Dot(x.data() + r * x_stride, values.data() + j * k, k);
          }
        }
        for (Isa isa : isas) {
          for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
            SCOPED_TRACE("k " + std::to_string(k) + " n " + std::to_string(n) + " rows " +
                         std::to_string(rows) + " " + IsaName(isa) +
                         (p == nullptr ? " inline" : " pool"));
            std::vector<float> y(rows * y_stride, -1.0f);
            ASSERT_TRUE(
                Linear(Context{p, isa}, x.data(), x_stride, rows, *w, y.data(), y_stride).ok());
            ASSERT_EQ(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)), 0);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace twinspan::cpu
