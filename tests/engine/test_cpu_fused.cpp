// The CPU backend's fused and hand-vectorized paths against their unfused references:
// relu_backward (cpu_fused.cpp) against the composed rule mul(g, gt(y, 0).to(dtype)) (finite
// gradients, outputs with NaN, infinities and -0), and
// the 2x2 max pooling (cpu_pool.cpp's MaxPool2x2Job, max_pool_2x2.cpp's AVX-512 rows)
// against the baseline ISA's loop and against the general window loop (strided input), on
// every ISA level the machine has, with NaN, ties, infinities and rows of 7 to 33 outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"
#include "tests/engine/cpu_kernel_util.h"

using namespace kiln;
using namespace kiln::testing_cpu;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// n values: random in [-2, 2] (rounded to 1/8, so ties happen) with NaN, +-inf, +-0 sprinkled in.
std::vector<float> awkward_values(size_t n, unsigned seed) {
  std::vector<float> v = random_floats(n, -2, 2, seed);
  for (size_t i = 0; i < n; ++i) {
    v[i] = std::round(v[i] * 8) / 8;
    if (i % 37 == 5) v[i] = kNaN;
    if (i % 41 == 7) v[i] = -kInf;
    if (i % 43 == 9) v[i] = kInf;
    if (i % 29 == 3) v[i] = -0.0f;
  }
  return v;
}

// Finite gradients: where out <= 0 the composed rule multiplies by 0, which gives NaN for an
// infinite or NaN gradient, where the fused op (as PyTorch's threshold_backward) gives 0.
std::vector<float> finite_values(size_t n, unsigned seed) {
  std::vector<float> v = awkward_values(n, seed);
  for (float& x : v)
    if (!std::isfinite(x)) x = 1.5f;
  return v;
}

// Values as doubles, compared with == (so -0 == +0: g * 0 is -0 for a negative g, the fused
// op writes +0) and NaN matching NaN.
::testing::AssertionResult same_values(const Tensor& got, const Tensor& want) {
  const std::vector<double> a = got.to(DType::f64).contiguous().to_vector<double>();
  const std::vector<double> b = want.to(DType::f64).contiguous().to_vector<double>();
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes " << a.size() << " and " << b.size();
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))))
      return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << " vs " << b[i];
  return ::testing::AssertionSuccess();
}

std::vector<uint64_t> bits(const Tensor& t) {  // exact comparison, NaN included
  Tensor c = t.contiguous();
  std::vector<uint64_t> out(static_cast<size_t>(c.numel()));
  const size_t es = dtype_size(c.dtype());
  const TensorArg a = c.arg();
  const char* p = static_cast<const char*>(a.data) + a.offset * static_cast<int64_t>(es);
  for (size_t i = 0; i < out.size(); ++i) std::memcpy(&out[i], p + i * es, es);
  return out;
}

TEST(CpuFused, ReluBackwardMatchesTheComposedRule) {
  Backend* cpu = backend_for(Device());
  for (DType dt : {DType::f32, DType::bf16, DType::f16, DType::f64}) {
    SCOPED_TRACE(dtype_name(dt));
    ASSERT_TRUE(cpu->supports(OpId::relu_backward, dt));
    for_each_isa([&](cpu::Isa) {
      for (int64_t n : {int64_t{1}, int64_t{37}, int64_t{5000}, int64_t{70001}}) {  // tails; one and two threads
        std::vector<float> gv = finite_values(static_cast<size_t>(n), 1), yv = awkward_values(static_cast<size_t>(n), 2);
        Tensor g = Tensor::from_vector(gv, {n}).to(dt), y = Tensor::from_vector(yv, {n}).to(dt);
        Tensor want = mul(g, gt(y, Tensor::scalar(0, dt, Device())).to(dt));
        Tensor got = Tensor::empty({n}, dt);
        cpu->relu_backward(got.arg(), g.arg(), y.arg());
        EXPECT_TRUE(same_values(got, want)) << "n " << n;
      }
      // strided and broadcast operands: g transposed, y broadcast along rows
      Tensor g = Tensor::from_vector(finite_values(12 * 9, 3), {9, 12}).to(dt).t();  // [12, 9], strides (1, 12)
      Tensor y = Tensor::from_vector(awkward_values(9, 4), {1, 9}).to(dt).expand({12, 9});
      Tensor want = mul(g, gt(y, Tensor::scalar(0, dt, Device())).to(dt));
      Tensor got = Tensor::empty({12, 9}, dt);
      cpu->relu_backward(got.arg(), g.arg(), y.arg());
      EXPECT_TRUE(same_values(got, want)) << "strided";
    });
  }
  Tensor a = Tensor::empty({3}), b = Tensor::empty({4});
  EXPECT_THROW(cpu->relu_backward(a.arg(), a.arg(), b.arg()), ShapeError);
  Tensor h = Tensor::empty({3}, DType::bf16);
  EXPECT_THROW(cpu->relu_backward(a.arg(), h.arg(), a.arg()), DTypeError);
  Tensor i = Tensor::empty({3}, DType::i64);
  EXPECT_FALSE(cpu->supports(OpId::relu_backward, DType::i64));
  EXPECT_THROW(cpu->relu_backward(i.arg(), i.arg(), i.arg()), DTypeError);
}

TEST(CpuFused, ReluGradientThroughAutogradIsTheRule) {
  for (DType dt : {DType::f32, DType::bf16}) {
    Tensor x = Tensor::from_vector(awkward_values(300, 5), {3, 100}).to(dt).requires_grad_(true);
    Tensor g = Tensor::from_vector(finite_values(300, 6), {3, 100}).to(dt);
    Tensor y = relu(x);
    sum(mul(y, g)).backward();
    Tensor want = mul(g, gt(y.detach(), Tensor::scalar(0, dt, Device())).to(dt));
    EXPECT_TRUE(same_values(x.grad(), want)) << dtype_name(dt);
  }
}

// max_pool2d with indices through the backend; `strided` gives the input a row stride of
// W + 3 (a view), which takes the general window loop.
std::pair<Tensor, Tensor> pool2x2(const Tensor& x, bool strided) {
  Tensor in = x;
  if (strided) {
    Shape wide = x.shape();
    wide.back() += 3;
    in = Tensor::zeros(wide, x.dtype()).narrow(3, 0, x.size(3));
    in.copy_(x);
  }
  Shape so{x.size(0), x.size(1), x.size(2) / 2, x.size(3) / 2};
  Tensor y = Tensor::empty(so, x.dtype()), ix = Tensor::empty(so, DType::i64);
  Pool2dParams p;
  p.kernel[0] = p.kernel[1] = p.stride[0] = p.stride[1] = 2;
  backend_for(Device())->max_pool2d_forward(y.arg(), ix.arg(), in.arg(), p);
  return {y, ix};
}

TEST(CpuFused, MaxPool2x2MatchesTheBaselineAndTheGeneralLoop) {
  for (DType dt : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dt));
    for (auto [h, w] : {std::pair<int64_t, int64_t>{28, 28}, {14, 14}, {15, 34}, {6, 64}, {4, 66}, {3, 2}}) {
      SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w));
      const int64_t n = 2, c = 3;
      Tensor x = Tensor::from_vector(awkward_values(static_cast<size_t>(n * c * h * w), static_cast<unsigned>(h * w)),
                                     {n, c, h, w}).to(dt);
      cpu::set_cpu_isa(cpu::Isa::base);
      auto [y_ref, i_ref] = pool2x2(x, true);  // the general loop
      auto [y_base, i_base] = pool2x2(x, false);
      EXPECT_EQ(bits(y_base), bits(y_ref));
      EXPECT_EQ(bits(i_base), bits(i_ref));
      for_each_isa([&](cpu::Isa) {
        auto [y, i] = pool2x2(x, false);
        EXPECT_EQ(bits(y), bits(y_ref));
        EXPECT_EQ(bits(i), bits(i_ref));
      });
    }
  }
}

}  // namespace
