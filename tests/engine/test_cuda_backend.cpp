// The CUDA backend against the CPU backend (the reference): every op family on f32,
// f16, bf16, f64 and the integer/bool types it takes, strided and broadcast inputs,
// a CNN's forward and gradients, Adam, and the bad-input errors. Without a CUDA device
// (or without the plugin) the comparisons skip, naming the registry's reason, and one
// test checks that the reason is given.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"
#include "tests/engine/cuda_test_util.h"
#include "engine/nn/functional.h"
#include "engine/optim/adam.h"
#include "engine/train/reference_models.h"

namespace kiln {
namespace {

using cuda_test::cuda_reason;
using cuda_test::have_cuda;
using cuda_test::kGpu;


double tol_for(DType t) {
  switch (t) {
    case DType::f16: return 2e-2;
    case DType::bf16: return 8e-2;
    case DType::f32: return 1e-4;
    default: return 1e-9;
  }
}

// |cuda - cpu| <= tol * (1 + |cpu|) elementwise, NaN where the CPU has NaN.
void expect_close(const Tensor& gpu, const Tensor& cpu, double tol, const std::string& what) {
  ASSERT_EQ(gpu.device(), kGpu) << what;
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  std::vector<double> g = gpu.to(Device()).to(DType::f64).contiguous().to_vector<double>();
  std::vector<double> c = cpu.to(DType::f64).contiguous().to_vector<double>();
  int bad = 0;
  for (size_t i = 0; i < c.size() && bad < 5; ++i) {
    const bool ok = std::isnan(c[i]) ? std::isnan(g[i]) : std::fabs(g[i] - c[i]) <= tol * (1 + std::fabs(c[i]));
    if (!ok) ++bad, ADD_FAILURE() << what << ": element " << i << " cuda " << g[i] << " cpu " << c[i];
  }
}

Tensor rnd(const Shape& s, DType t, uint64_t seed, double lo = -2, double hi = 2) {
  Generator g(seed);
  Tensor x = uniform(s, lo, hi, DType::f64, Device(), &g);
  if (!is_floating(t)) x = floor(x);
  return x.to(t);
}

const DType kFloats[] = {DType::f32, DType::f16, DType::bf16, DType::f64};
const DType kAll[] = {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i64,
                      DType::i32, DType::u8,  DType::i8,   DType::bool_};

TEST(CudaBackend, ReportsDevicesOrWhyNot) {
  if (!std::filesystem::exists(backend_plugin_dir() + "/libkiln_backend_cuda.so"))
    GTEST_SKIP() << "the CUDA plugin is not built";
  if (have_cuda()) {
    for (const DeviceInfo& d : list_devices())
      if (d.device.type == DeviceType::cuda) {
        EXPECT_GT(d.memory_bytes, 0u);
        EXPECT_GT(d.compute_units, 0);
        EXPECT_NE(d.name.find("sm_"), std::string::npos) << d.name;
        EXPECT_GT(d.score, 1000.0);
      }
    EXPECT_EQ(default_device().type, DeviceType::cuda);
  } else {
    EXPECT_FALSE(cuda_reason().empty()) << "no CUDA device and no reason given";
    EXPECT_EQ(Tensor::ones({2}).sum().item<float>(), 2.0f);  // the CPU keeps working
  }
}

TEST(CudaBackend, UnaryAllDtypes) {
  REQUIRE_CUDA();
  const UnaryOp ops[] = {UnaryOp::neg, UnaryOp::abs, UnaryOp::sign, UnaryOp::relu, UnaryOp::floor,
                         UnaryOp::exp, UnaryOp::log1p, UnaryOp::tanh, UnaryOp::sigmoid, UnaryOp::gelu,
                         UnaryOp::sqrt, UnaryOp::erf, UnaryOp::round};
  for (DType t : kAll) {
    if (t == DType::bool_) continue;
    Tensor x = rnd({3, 5, 7}, t, 1, 0.1, 3);
    for (UnaryOp op : ops) {
      auto f = [&](const Tensor& a) -> Tensor {
        switch (op) {
          case UnaryOp::neg: return neg(a);
          case UnaryOp::abs: return abs(a);
          case UnaryOp::sign: return sign(a);
          case UnaryOp::relu: return relu(a);
          case UnaryOp::floor: return floor(a);
          case UnaryOp::exp: return exp(a);
          case UnaryOp::log1p: return log1p(a);
          case UnaryOp::tanh: return tanh(a);
          case UnaryOp::sigmoid: return sigmoid(a);
          case UnaryOp::gelu: return gelu(a);
          case UnaryOp::sqrt: return sqrt(a);
          case UnaryOp::erf: return erf(a);
          default: return round(a);
        }
      };
      if (t == DType::u8 && op == UnaryOp::neg) continue;
      Tensor want = f(x);
      expect_close(f(x.to(kGpu)), want, tol_for(want.dtype()), std::string(unary_op_name(op)) + " " + dtype_name(t));
      // a transposed (non-contiguous) input
      Tensor xt = x.transpose(0, 2);
      expect_close(f(xt.to(kGpu).transpose(0, 2).transpose(0, 2)), f(xt), tol_for(want.dtype()),
                   std::string(unary_op_name(op)) + " strided " + dtype_name(t));
    }
    expect_close(clamp(x.to(kGpu), 0.5, 1.5), clamp(x, 0.5, 1.5), tol_for(t), std::string("clamp ") + dtype_name(t));
    expect_close(pow(x.to(kGpu), 2.0), pow(x, 2.0), tol_for(t), std::string("pow ") + dtype_name(t));
  }
}

TEST(CudaBackend, BinaryBroadcastAllDtypes) {
  REQUIRE_CUDA();
  for (DType t : kAll) {
    Tensor a = rnd({4, 1, 6}, t, 2), b = rnd({5, 1}, t, 3);
    Tensor ag = a.to(kGpu), bg = b.to(kGpu);
    const std::string d = dtype_name(t);
    expect_close(add(ag, bg), add(a, b), tol_for(t), "add " + d);
    expect_close(mul(ag, bg), mul(a, b), tol_for(t), "mul " + d);
    expect_close(maximum(ag, bg), maximum(a, b), tol_for(t), "maximum " + d);
    expect_close(lt(ag, bg), lt(a, b), 0, "lt " + d);
    expect_close(eq(ag, bg), eq(a, b), 0, "eq " + d);
    expect_close(logical_or(ag, bg), logical_or(a, b), 0, "logical_or " + d);
    if (t != DType::bool_) expect_close(sub(ag, bg), sub(a, b), tol_for(t), "sub " + d);
    if (is_floating(t)) expect_close(div(ag, bg), div(a, b), tol_for(t), "div " + d);
    expect_close(where(gt(ag, bg), ag, bg), where(gt(a, b), a, b), 0, "where " + d);
  }
}

TEST(CudaBackend, CopyCastsEveryPair) {
  REQUIRE_CUDA();
  for (DType from : kAll) {
    Tensor x = rnd({3, 4}, from, 4, -3, 100).t();  // strided source
    for (DType to : kAll) {
      Tensor want = x.to(to);
      expect_close(x.to(kGpu).to(to), want, tol_for(to), std::string("cast ") + dtype_name(from) + "->" + dtype_name(to));
    }
  }
}

TEST(CudaBackend, Reductions) {
  REQUIRE_CUDA();
  for (DType t : kAll) {
    if (t == DType::bool_) continue;
    Tensor x = rnd({6, 33, 40}, t, 5, -3, 3);
    Tensor xg = x.to(kGpu);
    const std::string d = dtype_name(t);
    const double tol = is_floating(t) ? tol_for(t) * 10 : 0;
    for (std::vector<int64_t> dims : {std::vector<int64_t>{}, {0}, {1}, {2}, {0, 2}}) {
      expect_close(sum(xg, dims), sum(x, dims), tol, "sum " + d);
      expect_close(amax(xg, dims, true), amax(x, dims, true), 0, "amax " + d);
      expect_close(amin(xg, dims), amin(x, dims), 0, "amin " + d);
      if (is_floating(t)) {
        expect_close(mean(xg, dims), mean(x, dims), tol, "mean " + d);
        expect_close(var(xg, dims), var(x, dims), tol * 10, "var " + d);
      }
    }
    for (int64_t dim : {0, 1, 2}) {
      expect_close(argmax(xg, dim), argmax(x, dim), 0, "argmax " + d);
      expect_close(argmin(xg, dim), argmin(x, dim), 0, "argmin " + d);
    }
  }
  // one long row: the block-per-row path
  Tensor big = rnd({3, 100000}, DType::f32, 6);
  expect_close(sum(big.to(kGpu), {1}), sum(big, {1}), 1e-4, "long sum");
  expect_close(argmax(big.to(kGpu), 1), argmax(big, 1), 0, "long argmax");
}

TEST(CudaBackend, MatmulShapesAndDtypes) {
  REQUIRE_CUDA();
  for (DType t : kFloats) {
    const std::string d = dtype_name(t);
    Tensor a = rnd({5, 7}, t, 7), b = rnd({7, 3}, t, 8);
    const double tol = t == DType::f32 ? 1e-4 : tol_for(t) * 4;
    expect_close(matmul(a.to(kGpu), b.to(kGpu)), matmul(a, b), tol, "matmul " + d);
    expect_close(matmul(a.t().to(kGpu).t(), b.t().to(kGpu).t()), matmul(a, b), tol, "matmul transposed " + d);
    Tensor ba = rnd({2, 3, 4, 5}, t, 9), bb = rnd({3, 5, 6}, t, 10);  // broadcast batch
    expect_close(matmul(ba.to(kGpu), bb.to(kGpu)), matmul(ba, bb), tol, "batched matmul " + d);
    Tensor bc = rnd({2, 5, 6}, t, 21);
    expect_close(matmul(ba.to(kGpu).transpose(0, 1), bc.to(kGpu)), matmul(ba.transpose(0, 1), bc), tol,
                 "permuted batch matmul " + d);
    Tensor v = rnd({7}, t, 11);
    expect_close(matmul(a.to(kGpu), v.to(kGpu)), matmul(a, v), tol, "matrix-vector " + d);
  }
}

TEST(CudaBackend, ConvPoolSoftmaxAndGradients) {
  REQUIRE_CUDA();
  for (DType t : kFloats) {
    const std::string d = dtype_name(t);
    const double tol = t == DType::f32 ? 2e-4 : tol_for(t) * 4;
    Conv2dParams p;
    p.stride[0] = 2, p.padding[0] = 1, p.padding[1] = 2, p.dilation[1] = 2, p.groups = 2;
    Tensor x = rnd({2, 4, 9, 11}, t, 12), w = rnd({6, 2, 3, 3}, t, 13), bias = rnd({6}, t, 14);
    Tensor xg = x.to(kGpu).requires_grad_(), wg = w.to(kGpu).requires_grad_(), bg = bias.to(kGpu).requires_grad_();
    x.requires_grad_(), w.requires_grad_(), bias.requires_grad_();
    Tensor y = conv2d(x, w, bias, p), yg = conv2d(xg, wg, bg, p);
    expect_close(yg, y, tol, "conv2d " + d);
    Pool2dParams mp;
    mp.kernel[0] = mp.kernel[1] = 3, mp.stride[0] = mp.stride[1] = 2, mp.padding[0] = 1, mp.ceil_mode = true;
    Tensor z = log_softmax(max_pool2d(y, mp).flatten(1), 1), zg = log_softmax(max_pool2d(yg, mp).flatten(1), 1);
    expect_close(zg, z, tol, "pool+log_softmax " + d);
    Tensor zz = softmax(avg_pool2d(y, mp), 1), zzg = softmax(avg_pool2d(yg, mp), 1);
    expect_close(zzg, zz, tol, "avg_pool+softmax " + d);
    Tensor gw = rnd(z.shape(), t, 15), gw2 = rnd(zz.shape(), t, 16);
    (sum(mul(z, gw)) + sum(mul(zz, gw2))).backward();
    (sum(mul(zg, gw.to(kGpu))) + sum(mul(zzg, gw2.to(kGpu)))).backward();
    expect_close(xg.grad(), x.grad(), tol * 4, "conv input grad " + d);
    expect_close(wg.grad(), w.grad(), tol * 4, "conv weight grad " + d);
    expect_close(bg.grad(), bias.grad(), tol * 4, "conv bias grad " + d);
  }
}

TEST(CudaBackend, IndexOps) {
  REQUIRE_CUDA();
  Tensor idx = Tensor::from_vector<int64_t>({2, 0, 1, 2, 2, 0}, {2, 3});
  for (DType t : kAll) {
    const std::string d = dtype_name(t);
    Tensor x = rnd({3, 3}, t, 17, 0, 5);
    expect_close(gather(x.to(kGpu), 0, idx.to(kGpu)), gather(x, 0, idx), 0, "gather " + d);
    Tensor src = rnd({2, 3}, t, 18, 0, 5);
    expect_close(scatter_add(x.to(kGpu), 0, idx.to(kGpu), src.to(kGpu)), scatter_add(x, 0, idx, src), tol_for(t),
                 "scatter_add " + d);
    Tensor i1 = Tensor::from_vector<int64_t>({2, 2, 0}, {3});
    expect_close(index_select(x.to(kGpu), 1, i1.to(kGpu)), index_select(x, 1, i1), 0, "index_select " + d);
    Tensor src3 = rnd({3, 3}, t, 22, 0, 5).t();  // strided source
    expect_close(index_add(x.to(kGpu), 1, i1.to(kGpu), src3.to(kGpu)), index_add(x, 1, i1, src3), tol_for(t) * 2,
                 "index_add " + d);
  }
  // Bad indices are skipped by the kernel and reported at the next wait for the device.
  Tensor bad = Tensor::from_vector<int64_t>({0, 3}, {2});
  try {
    index_select(Tensor::ones({3}, DType::f32, kGpu), 0, bad.to(kGpu)).to(Device());
    ADD_FAILURE() << "index 3 of a size-3 dim did not throw";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("index_select: index 3 is out of range for dimension 0 of size 3"),
              std::string::npos) << e.what();
  }
  EXPECT_THROW(gather(Tensor::ones({2, 3}, DType::f32, kGpu), 1, bad.reshape({2, 1}).to(kGpu)).sum().item<float>(),
               IndexError);
  Tensor ok = Tensor::from_vector<int64_t>({0, 2}, {2}).to(kGpu);
  EXPECT_EQ(index_select(Tensor::arange(0, 3, 1, DType::f32, kGpu), 0, ok).sum().item<float>(), 2.0f);
}

TEST(CudaBackend, CnnTrainingStepsMatchCpu) {
  REQUIRE_CUDA();
  manual_seed(3);
  auto cpu_model = train::make_model("cnn");
  manual_seed(3);
  auto gpu_model = train::make_model("cnn");
  gpu_model->to(kGpu);
  optim::AdamOptions o;
  o.lr = 1e-3;
  optim::Adam cpu_opt(cpu_model->parameters(), o), gpu_opt(gpu_model->parameters(), o);
  Tensor x = rnd({16, 1, 28, 28}, DType::f32, 19);
  Tensor y = floor(rnd({16}, DType::f64, 20, 0, 9.99)).to(DType::i64);
  for (int step = 0; step < 3; ++step) {
    cpu_opt.zero_grad(), gpu_opt.zero_grad();
    Tensor lc = nn::F::cross_entropy((*cpu_model)(x), y), lg = nn::F::cross_entropy((*gpu_model)(x.to(kGpu)), y.to(kGpu));
    expect_close(lg, lc, 1e-4, "loss at step " + std::to_string(step));
    lc.backward(), lg.backward();
    cpu_opt.step(), gpu_opt.step();
  }
  auto pc = cpu_model->parameters(), pg = gpu_model->parameters();
  for (size_t i = 0; i < pc.size(); ++i) expect_close(pg[i], pc[i], 1e-3, "parameter " + std::to_string(i));
}

TEST(CudaBackend, BadInputErrors) {
  REQUIRE_CUDA();
  Tensor a = Tensor::ones({2, 2}, DType::f32, kGpu), c = Tensor::ones({2, 2});
  try {
    add(a, c);
    ADD_FAILURE() << "mixed devices did not throw";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cpu"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Tensor::ones({2}, DType::f32, Device(DeviceType::cuda, 64)), DeviceError);
  Backend* be = backend_for(kGpu);
  EXPECT_FALSE(be->supports(OpId::matmul, DType::i64));
  Tensor i = Tensor::ones({2, 2}, DType::i64, kGpu);
  EXPECT_THROW(be->matmul(i.arg(), i.arg(), i.arg()), DTypeError);
  Tensor h = Tensor::ones({4}, DType::f16, kGpu);
  EXPECT_THROW(be->adam_step(h.arg(), h.arg(), h.arg(), h.arg(), AdamParams{}), DTypeError);
  try {
    be->allocate(size_t{1} << 52);  // 4 PiB
    ADD_FAILURE() << "a 4 PiB allocation did not throw";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("free"), std::string::npos) << e.what();
  }
  EXPECT_EQ(sum(a).item<float>(), 4.0f);  // the device still works
}

TEST(CudaBackend, CachingAllocatorReusesMemory) {
  REQUIRE_CUDA();
  Backend* be = backend_for(kGpu);
  for (int i = 0; i < 3; ++i) Tensor t = Tensor::zeros({1 << 20}, DType::f32, kGpu);
  const uint64_t reserved = be->memory_stats().reserved;
  for (int i = 0; i < 50; ++i) Tensor t = Tensor::zeros({1 << 20}, DType::f32, kGpu);
  EXPECT_EQ(be->memory_stats().reserved, reserved);
  EXPECT_GE(be->memory_stats().peak_allocated, uint64_t{4} << 20);
}

}  // namespace
}  // namespace kiln
