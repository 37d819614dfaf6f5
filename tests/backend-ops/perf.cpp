// --mode=perf: microseconds per op on the device (and the CPU backend, for scale), with
// GFLOP/s or GB/s. Times come from the device's clock (Backend::begin_timing, Vulkan
// timestamp queries) where it has one, else from the host's (printed as "host time").
// Sizes shrink 16x on software devices (lavapipe). A benchmark mode: the tests fail only
// when an op throws. Test mode adds checks of the device timer itself (timing.*).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "engine/core/error.h"
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
  v.back().c.sub_op = static_cast<int>(BinaryOp::add);
  add("unary.exp f32 [" + std::to_string(n) + "]", OpId::unary,
      {output(rng, DType::f32, {n}), input(rng, DType::f32, {n}, Layout::contiguous, uniform(-1, 1))},
      [](Backend& b, std::vector<TensorArg>& a) { b.unary(UnaryOp::exp, a[0], a[1], 0, 0); }, 8.0 * n, "GB/s");
  v.back().c.sub_op = static_cast<int>(UnaryOp::exp);
  const int64_t t = small ? 1024 : 4096;
  add("copy.transpose f32 [" + std::to_string(t) + "^2]", OpId::copy,
      {output(rng, DType::f32, {t, t}), input(rng, DType::f32, {t, t}, Layout::transposed, uniform(-1, 1))},
      [](Backend& b, std::vector<TensorArg>& a) { b.copy(a[0], a[1]); }, 8.0 * t * t, "GB/s");
  add("reduce.sum f32 [" + std::to_string(n) + "] -> [1]", OpId::reduce,
      {output(rng, DType::f32, {1}), input(rng, DType::f32, {n}, Layout::contiguous, uniform(-1, 1))},
      [](Backend& b, std::vector<TensorArg>& a) { b.reduce(ReduceOp::sum, a[0], a[1], 0); }, 4.0 * n, "GB/s");
  v.back().c.sub_op = static_cast<int>(ReduceOp::sum);
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
  {  // f16 (tensor cores where the device has cooperative matrices); one size: the CPU is slow at it
    const int64_t m = small ? 256 : 1024;
    add("matmul f16 " + std::to_string(m) + "^3", OpId::matmul,
        {output(rng, DType::f16, {m, m}), input(rng, DType::f16, {m, m}, Layout::contiguous, uniform(-1, 1)),
         input(rng, DType::f16, {m, m}, Layout::contiguous, uniform(-1, 1))},
        [](Backend& b, std::vector<TensorArg>& a) { b.matmul(a[0], a[1], a[2]); }, 2.0 * m * m * m, "GFLOP/s");
    v.back().c.dtype = DType::f16;
  }
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

struct Timing {
  double seconds = 0;   // per run
  bool device = false;  // from the device's clock (else the host's)
};

Timing time_op(Backend& b, const Case& c, int runs) {
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
  Timing t;
  t.device = b.begin_timing();
  auto t0 = std::chrono::steady_clock::now();
  int done = 0;
  for (; done < runs || since(t0) < 0.2; ++done) c.run(b, args);
  if (t.device) {
    t.seconds = b.end_timing() / done;
  } else {
    b.synchronize();
    t.seconds = since(t0) / done;
  }
  for (size_t i = 0; i < ptrs.size(); ++i) b.deallocate(ptrs[i], c.bufs[i].storage.size());
  return t;
}

const char* clock_name(const Timing& t) { return t.device ? "device time" : "host time"; }

class PerfTest : public testing::Test {
 public:
  PerfTest(Device dev, PerfCase pc) : dev_(dev), pc_(std::move(pc)) {}
  void TestBody() override {
    Backend* dev = backend_for(dev_);
    Backend* cpu = backend_for(Device());
    if (!dev->supports(pc_.c.op, pc_.c.dtype, pc_.c.sub_op))
      GTEST_SKIP() << "unsupported: " << pc_.c.name << " on " << dev_.str();
    Timing td, tc;
    ASSERT_NO_THROW(td = time_op(*dev, pc_.c, 10)) << pc_.c.name;
    ASSERT_NO_THROW(tc = time_op(*cpu, pc_.c, 3)) << pc_.c.name;
    const double sd = td.seconds, sc = tc.seconds;
    std::printf("PERF %-58s %-9s %10.1f us %9.1f %-7s (%s) | cpu %10.1f us %9.1f %s (%s)\n", pc_.c.name.c_str(),
                dev_.str().c_str(), sd * 1e6, pc_.work / sd / 1e9, pc_.unit, clock_name(td), sc * 1e6,
                pc_.work / sc / 1e9, pc_.unit, clock_name(tc));
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


namespace {
// A matmul case of m^3 on `dev`'s memory, for the timer checks.
struct HeldMatmul {
  Backend& b;
  std::vector<void*> ptrs;
  std::vector<TensorArg> args;
  HeldMatmul(Backend& backend, int64_t m) : b(backend) {
    std::vector<float> ones(static_cast<size_t>(m * m), 0.5f);
    for (int i = 0; i < 3; ++i) {
      void* p = b.allocate(ones.size() * 4);
      b.upload(p, 0, ones.data(), ones.size() * 4);
      ptrs.push_back(p);
      args.push_back(TensorArg{p, 0, DType::f32, {m, m}, {m, 1}});
    }
  }
  ~HeldMatmul() {
    for (void* p : ptrs) b.deallocate(p, static_cast<size_t>(args[0].numel()) * 4);
  }
  void run(int times) {
    for (int i = 0; i < times; ++i) b.matmul(args[0], args[1], args[2]);
  }
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

void register_timing_tests(const Device& dev) {
  const std::string suite = dev.str() + ".timing";
  // The device's time of a span lies within the host's time around it, and grows with the work.
  testing::RegisterTest(suite.c_str(), "device_time_within_host_time_and_grows_with_work", nullptr, nullptr, __FILE__,
                        __LINE__, [dev]() -> testing::Test* {
                          struct T : testing::Test {
                            Device d;
                            explicit T(Device x) : d(x) {}
                            void TestBody() override {
                              Backend& b = *backend_for(d);
                              const bool software = b.info().kind == "software";
                              HeldMatmul mm(b, software ? 192 : 1024);
                              mm.run(1);
                              b.synchronize();
                              if (!b.begin_timing())
                                GTEST_SKIP() << d.str() << " has no timestamp queries (perf mode uses host time)";
                              auto t0 = std::chrono::steady_clock::now();
                              mm.run(1);
                              const double one = b.end_timing();
                              const double host_one = seconds_since(t0);
                              ASSERT_TRUE(b.begin_timing());
                              t0 = std::chrono::steady_clock::now();
                              mm.run(16);
                              const double many = b.end_timing();
                              const double host_many = seconds_since(t0);
                              EXPECT_GT(one, 0.0);
                              EXPECT_LE(one, host_one * 1.05 + 1e-5);
                              EXPECT_LE(many, host_many * 1.05 + 1e-5);
                              EXPECT_GT(many, 2.0 * one) << "16 matmuls took " << many << " s, one " << one << " s";
                            }
                          };
                          return new T(dev);
                        });
  // end_timing without begin_timing is an error, not a garbage number.
  testing::RegisterTest(suite.c_str(), "end_without_begin_throws", nullptr, nullptr, __FILE__, __LINE__,
                        [dev]() -> testing::Test* {
                          struct T : testing::Test {
                            Device d;
                            explicit T(Device x) : d(x) {}
                            void TestBody() override {
                              Backend& b = *backend_for(d);
                              if (!b.begin_timing()) GTEST_SKIP() << d.str() << " has no timestamp queries";
                              (void)b.end_timing();
                              EXPECT_THROW((void)b.end_timing(), Error);
                            }
                          };
                          return new T(dev);
                        });
}

}  // namespace kiln::backend_ops
