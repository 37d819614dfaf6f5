// --mode=perf: microseconds per op on the device (and the CPU backend, for scale), with
// GFLOP/s or GB/s. Sizes shrink 16x on software devices (lavapipe). A benchmark mode: the
// tests fail only when an op throws.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "engine/core/registry.h"
#include "tests/backend-ops/harness.h"

namespace kiln::backend_ops {

namespace {
struct PerfCase {
  Case c;
  double work;       // flops or bytes per run
  const char* unit;  // "GFLOP/s" or "GB/s"
};

std::vector<PerfCase> perf_cases(bool small) {
  std::vector<PerfCase> v;
  Rng rng(1);
  const int64_t n = small ? (1 << 20) : (1 << 24);
  auto add = [&](std::string name, OpId op, std::vector<Buf> bufs, std::function<void(Backend&, std::vector<TensorArg>&)> f,
                 double work, const char* unit) {
    Case c;
    c.name = std::move(name);
    c.op = op;
    c.bufs = std::move(bufs);
    c.run = std::move(f);
    v.push_back({std::move(c), work, unit});
  };
  add("binary.add f32 [" + std::to_string(n) + "]", OpId::binary,
      {output(rng, DType::f32, {n}), input(rng, DType::f32, {n}, Layout::contiguous, uniform(-1, 1)),
       input(rng, DType::f32, {n}, Layout::contiguous, uniform(-1, 1))},
      [](Backend& b, std::vector<TensorArg>& a) { b.binary(BinaryOp::add, a[0], a[1], a[2]); }, 12.0 * n, "GB/s");
  add("unary.exp f32 [" + std::to_string(n) + "]", OpId::unary,
      {output(rng, DType::f32, {n}), input(rng, DType::f32, {n}, Layout::contiguous, uniform(-1, 1))},
      [](Backend& b, std::vector<TensorArg>& a) { b.unary(UnaryOp::exp, a[0], a[1], 0, 0); }, 8.0 * n, "GB/s");
  const int64_t t = small ? 1024 : 4096;
  add("copy.transpose f32 [" + std::to_string(t) + "^2]", OpId::copy,
      {output(rng, DType::f32, {t, t}), input(rng, DType::f32, {t, t}, Layout::transposed, uniform(-1, 1))},
      [](Backend& b, std::vector<TensorArg>& a) { b.copy(a[0], a[1]); }, 8.0 * t * t, "GB/s");
  add("reduce.sum f32 [" + std::to_string(n) + "] -> [1]", OpId::reduce,
      {output(rng, DType::f32, {1}), input(rng, DType::f32, {n}, Layout::contiguous, uniform(-1, 1))},
      [](Backend& b, std::vector<TensorArg>& a) { b.reduce(ReduceOp::sum, a[0], a[1], 0); }, 4.0 * n, "GB/s");
  const int64_t rows = small ? 512 : 8192;
  add("softmax f32 [" + std::to_string(rows) + ", 1000]", OpId::softmax_forward,
      {output(rng, DType::f32, {rows, 1000}), input(rng, DType::f32, {rows, 1000}, Layout::contiguous, uniform(-3, 3))},
      [](Backend& b, std::vector<TensorArg>& a) { b.softmax_forward(a[0], a[1], 1, false); }, 8.0 * rows * 1000,
      "GB/s");
  for (int64_t m : small ? std::vector<int64_t>{256, 512} : std::vector<int64_t>{1024, 4096})
    add("matmul f32 " + std::to_string(m) + "^3", OpId::matmul,
        {output(rng, DType::f32, {m, m}), input(rng, DType::f32, {m, m}, Layout::contiguous, uniform(-1, 1)),
         input(rng, DType::f32, {m, m}, Layout::contiguous, uniform(-1, 1))},
        [](Backend& b, std::vector<TensorArg>& a) { b.matmul(a[0], a[1], a[2]); }, 2.0 * m * m * m, "GFLOP/s");
  const int64_t batch = small ? 16 : 128;
  Conv2dParams cp;
  cp.padding[0] = cp.padding[1] = 1;
  const double conv_flops = 2.0 * batch * 64 * 28 * 28 * 32 * 9;
  add("conv2d_forward f32 [" + std::to_string(batch) + ", 32, 28, 28] * [64, 32, 3, 3]", OpId::conv2d_forward,
      {output(rng, DType::f32, {batch, 64, 28, 28}),
       input(rng, DType::f32, {batch, 32, 28, 28}, Layout::contiguous, uniform(-1, 1)),
       input(rng, DType::f32, {64, 32, 3, 3}, Layout::contiguous, uniform(-1, 1)),
       input(rng, DType::f32, {64}, Layout::contiguous, uniform(-1, 1))},
      [cp](Backend& b, std::vector<TensorArg>& a) { b.conv2d_forward(a[0], a[1], a[2], a[3], cp); }, conv_flops,
      "GFLOP/s");
  add("conv2d_backward_input f32 same", OpId::conv2d_backward_input,
      {output(rng, DType::f32, {batch, 32, 28, 28}),
       input(rng, DType::f32, {batch, 64, 28, 28}, Layout::contiguous, uniform(-1, 1)),
       input(rng, DType::f32, {64, 32, 3, 3}, Layout::contiguous, uniform(-1, 1))},
      [cp](Backend& b, std::vector<TensorArg>& a) { b.conv2d_backward_input(a[0], a[1], a[2], cp); }, conv_flops,
      "GFLOP/s");
  add("conv2d_backward_weight f32 same", OpId::conv2d_backward_weight,
      {output(rng, DType::f32, {64, 32, 3, 3}), output(rng, DType::f32, {64}),
       input(rng, DType::f32, {batch, 64, 28, 28}, Layout::contiguous, uniform(-1, 1)),
       input(rng, DType::f32, {batch, 32, 28, 28}, Layout::contiguous, uniform(-1, 1))},
      [cp](Backend& b, std::vector<TensorArg>& a) { b.conv2d_backward_weight(a[0], a[1], a[2], a[3], cp); },
      conv_flops, "GFLOP/s");
  return v;
}

double time_op(Backend& b, const Case& c, int runs) {
  std::vector<void*> ptrs;
  std::vector<TensorArg> args;
  for (const Buf& buf : c.bufs) {
    void* p = b.allocate(buf.storage.size());
    b.upload(p, 0, buf.storage.data(), buf.storage.size());
    ptrs.push_back(p);
    args.push_back(TensorArg{p, buf.offset, buf.dtype, buf.shape, buf.strides});
  }
  // warm-up: pipelines, caches, and a GPU's clocks (which rise only under load), ~0.2 s
  auto since = [](auto t) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(); };
  auto w0 = std::chrono::steady_clock::now();
  do {
    c.run(b, args);
    b.synchronize();
  } while (since(w0) < 0.2);
  auto t0 = std::chrono::steady_clock::now();
  int done = 0;
  for (; done < runs || since(t0) < 0.2; ++done) c.run(b, args);
  b.synchronize();
  double s = since(t0) / done;
  for (size_t i = 0; i < ptrs.size(); ++i) b.deallocate(ptrs[i], c.bufs[i].storage.size());
  return s;
}

class PerfTest : public testing::Test {
 public:
  PerfTest(Device dev, PerfCase pc) : dev_(dev), pc_(std::move(pc)) {}
  void TestBody() override {
    Backend* dev = backend_for(dev_);
    Backend* cpu = backend_for(Device());
    double sd = 0, sc = 0;
    ASSERT_NO_THROW(sd = time_op(*dev, pc_.c, 10)) << pc_.c.name;
    ASSERT_NO_THROW(sc = time_op(*cpu, pc_.c, 3)) << pc_.c.name;
    std::printf("PERF %-58s %-9s %10.1f us %9.1f %-7s | cpu %10.1f us %9.1f %s\n", pc_.c.name.c_str(),
                dev_.str().c_str(), sd * 1e6, pc_.work / sd / 1e9, pc_.unit, sc * 1e6, pc_.work / sc / 1e9, pc_.unit);
  }

 private:
  Device dev_;
  PerfCase pc_;
};
}  // namespace

void register_perf_tests(const Device& dev) {
  const bool small = backend_for(dev)->info().kind == "software";
  for (PerfCase& pc : perf_cases(small)) {
    const std::string suite = dev.str() + ".perf";
    std::string name;
    for (char ch : pc.c.name) name += ch == ' ' ? '_' : ch;
    testing::RegisterTest(suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [dev, pc]() -> testing::Test* { return new PerfTest(dev, pc); });
  }
}

}  // namespace kiln::backend_ops
