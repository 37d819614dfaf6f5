// The CPU backend's threading (Note [Team size] in backends/cpu/strided.h): parallel_for runs each
// element once, and neither it nor the ops of a batch-1 inference (an elementwise op on a few
// threads' worth of work, a oneDNN convolution, oneDNN's max pooling) end threads of libgomp's
// pool, which the next region would have to create again.
#include <gtest/gtest.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <set>
#include <vector>

#include "backends/cpu/strided.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"

using namespace kiln;

namespace {

class Threads {  // omp_set_num_threads(n) for one test
 public:
  explicit Threads(int n) : old_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~Threads() { omp_set_num_threads(old_); }

 private:
  int old_;
};

// The kernel thread ids of a full team: the same set as long as the pool keeps its threads.
std::set<long> team_thread_ids() {
  std::set<long> ids;
#pragma omp parallel
  {
    const long id = syscall(SYS_gettid);
#pragma omp critical
    ids.insert(id);
  }
  return ids;
}

}  // namespace

TEST(CpuThreads, ParallelForRunsEachElementOnce) {
  const Threads threads(4);
  for (int64_t n : {int64_t{0}, int64_t{1}, cpu::kGrain - 1, cpu::kGrain, cpu::kGrain + 1, 3 * cpu::kGrain + 7,
                    40 * cpu::kGrain + 5}) {
    std::vector<int> hits(static_cast<size_t>(n));
    cpu::parallel_for(n, cpu::kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)], 1) << "n " << n << ", element " << i;
  }
}

TEST(CpuThreads, WorkForFewerThreadsThanTheTeamKeepsThePool) {
  const Threads threads(4);
  const std::set<long> pool = team_thread_ids();
  ASSERT_EQ(pool.size(), 4u);
  cpu::parallel_for(cpu::kGrain, cpu::kGrain, [](int64_t, int64_t) {});  // 2 chunks of 4 threads
  EXPECT_EQ(team_thread_ids(), pool);
}

TEST(CpuThreads, BatchOneInferenceOpsKeepThePool) {
  const Threads threads(4);
  const NoGradGuard no_grad;
  manual_seed(3);
  const Tensor x = normal({1, 16, 56, 56}, 0, 1);  // 50,176 elements: 3 threads' worth
  const Tensor w = normal({16, 16, 3, 3}, 0, 0.1);
  Conv2dParams cp;
  cp.padding[0] = cp.padding[1] = 1;
  Pool2dParams pp;
  pp.kernel[0] = pp.kernel[1] = 3;
  pp.stride[0] = pp.stride[1] = 2;
  pp.padding[0] = pp.padding[1] = 1;
  const std::set<long> pool = team_thread_ids();
  Tensor y = x;
  for (int i = 0; i < 3; ++i) {
    y = conv2d_fused(y, w, Tensor(), Tensor(), cp, ConvEpilogue{});
    y = y * 0.5 + x;
    EXPECT_EQ(team_thread_ids(), pool) << "after round " << i;
  }
  y = max_pool2d(y, pp);
  EXPECT_EQ(team_thread_ids(), pool) << "after max_pool2d";
}
