// CPU backend elementwise kernels called directly: unary, binary, where, copy, fill,
// adam_step, against std:: references, on every ISA level the machine has.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "tests/common/unary_op_cases.h"
#include "tests/engine/cpu_kernel_util.h"

using namespace kiln;
using namespace kiln::testing_cpu;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<float> unary_inputs() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 0.625f, -0.625f, 0.99f,
                          1e-30f, -1e-30f, 1e-40f, 3e-8f, 88.7f, 88.72f, 89.0f, -87.0f, -103.0f, -104.5f, 200.0f,
                          -200.0f, 1e30f, -1e30f, kInf, -kInf, kNaN, 7.0f, -7.0f, 3.9f, -3.9f, 10.0f, -10.0f};
  for (int i = -2000; i <= 2000; ++i) v.push_back(i * 0.0137f);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> e(-38.0f, 38.0f);
  for (int i = 0; i < 500; ++i) v.push_back((i & 1 ? -1.0f : 1.0f) * std::pow(10.0f, e(rng)));
  return v;
}

}  // namespace

TEST(CpuKernelUnary, EveryOpF32MatchesStd) {
  cpu::CpuBackend be;
  std::vector<float> in = unary_inputs();
  const int64_t n = static_cast<int64_t>(in.size());
  for_each_isa([&](cpu::Isa) {
    for (const op_cases::UnaryOpCase& c : op_cases::unary_op_cases()) {
      if (c.op == UnaryOp::logical_not) continue;  // bool output: SignKeepsNaNAsZeroAndLogicalNotGivesBool
      SCOPED_TRACE(unary_op_name(c.op));
      std::vector<float> out(in.size(), -123.0f);
      be.unary(c.op, targ(out, {n}), targ(in, {n}), c.p0, c.p1);
      int bad = 0;
      for (int64_t i = 0; i < n && bad < 5; ++i) {
        double want = static_cast<float>(c.ref(in[i], c.p0, c.p1));  // the f32 result, rounded
        auto r = close(out[i], want, c.rtol, c.atol);
        if (!r) ++bad;
        EXPECT_TRUE(r) << "x = " << in[i];
      }
    }
  });
}

// Every row of engine/core/elementwise_ops.def has a test row (value, tolerance, gradient
// range) in tests/common/unary_op_cases.h: without one its kernels and backward rule go untested.
TEST(UnaryOpCases, CoverEveryOp) {
  std::set<UnaryOp> covered;
  for (const op_cases::UnaryOpCase& c : op_cases::unary_op_cases()) covered.insert(c.op);
  for (int o = 0; o < static_cast<int>(UnaryOp::count); ++o)
    EXPECT_TRUE(covered.count(static_cast<UnaryOp>(o))) << "no row in tests/common/unary_op_cases.h for "
                                                         << unary_op_name(static_cast<UnaryOp>(o));
}

TEST(CpuKernelUnary, SignKeepsNaNAsZeroAndLogicalNotGivesBool) {
  cpu::CpuBackend be;
  std::vector<float> in = {kNaN, -0.0f, 2.0f, 0.0f};
  std::vector<float> out(4);
  be.unary(UnaryOp::sign, targ(out, {4}), targ(in, {4}), 0, 0);
  EXPECT_EQ(out, (std::vector<float>{0, 0, 1, 0}));
  std::vector<uint8_t> b(4, 7);
  be.unary(UnaryOp::logical_not, targ(b.data(), DType::bool_, {4}), targ(in, {4}), 0, 0);
  EXPECT_EQ(b, (std::vector<uint8_t>{0, 1, 0, 1}));
}

TEST(CpuKernelUnary, OtherDtypes) {
  cpu::CpuBackend be;
  std::vector<double> d = {-1.5, 0.25, 3.0};
  std::vector<double> dout(3);
  be.unary(UnaryOp::exp, targ(dout, {3}), targ(d, {3}), 0, 0);
  for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(dout[i], std::exp(d[i]));
  be.unary(UnaryOp::gelu, targ(dout, {3}), targ(d, {3}), 0, 0);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(dout[i], 0.5 * d[i] * (1 + std::erf(d[i] / std::sqrt(2.0))), 1e-15);

  std::vector<bfloat16> bf = {bfloat16(-2.0f), bfloat16(0.5f), bfloat16(3.0f)};
  std::vector<bfloat16> bfo(3);
  be.unary(UnaryOp::exp, targ(bfo, {3}), targ(bf, {3}), 0, 0);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(float(bfo[i]), float(bfloat16(std::exp(float(bf[i])))));
  std::vector<half> h = {half(-2.0f), half(0.5f), half(3.0f)};
  std::vector<half> ho(3);
  be.unary(UnaryOp::relu, targ(ho, {3}), targ(h, {3}), 0, 0);
  EXPECT_EQ(float(ho[0]), 0.0f);
  EXPECT_EQ(float(ho[2]), 3.0f);
  be.unary(UnaryOp::sigmoid, targ(ho, {3}), targ(h, {3}), 0, 0);
  EXPECT_EQ(float(ho[1]), float(half(1 / (1 + std::exp(-0.5f)))));

  std::vector<int64_t> l = {-5, 0, 7, std::numeric_limits<int64_t>::min()};
  std::vector<int64_t> lo(4);
  be.unary(UnaryOp::neg, targ(lo, {4}), targ(l, {4}), 0, 0);
  EXPECT_EQ(lo, (std::vector<int64_t>{5, 0, -7, std::numeric_limits<int64_t>::min()}));
  be.unary(UnaryOp::abs, targ(lo, {3}), targ(l, {3}), 0, 0);
  EXPECT_EQ(lo[0], 5);
  be.unary(UnaryOp::sign, targ(lo, {3}), targ(l, {3}), 0, 0);
  EXPECT_EQ(lo[0], -1);
  EXPECT_EQ(lo[2], 1);
  be.unary(UnaryOp::pow_scalar, targ(lo, {3}), targ(l, {3}), 3, 0);
  EXPECT_EQ(lo[0], -125);
  EXPECT_EQ(lo[2], 343);
  std::vector<int32_t> i32 = {-5, 3, 10}, i32o(3);
  be.unary(UnaryOp::relu, targ(i32o, {3}), targ(i32, {3}), 0, 0);
  EXPECT_EQ(i32o, (std::vector<int32_t>{0, 3, 10}));
  be.unary(UnaryOp::clamp, targ(i32o, {3}), targ(i32, {3}), -1, 4);
  EXPECT_EQ(i32o, (std::vector<int32_t>{-1, 3, 4}));
  std::vector<uint8_t> u = {0, 3, 250}, uo(3);
  be.unary(UnaryOp::pow_scalar, targ(uo, {3}), targ(u, {3}), 2, 0);
  EXPECT_EQ(uo, (std::vector<uint8_t>{0, 9, static_cast<uint8_t>(250 * 250)}));
  std::vector<uint8_t> bl = {0, 1, 1}, blo(3);
  be.unary(UnaryOp::logical_not, targ(blo.data(), DType::bool_, {3}), targ(bl.data(), DType::bool_, {3}), 0, 0);
  EXPECT_EQ(blo, (std::vector<uint8_t>{1, 0, 0}));
  // int input, float output: computes in float (torch's out= semantics)
  std::vector<float> fo(3);
  be.unary(UnaryOp::exp, targ(fo, {3}), targ(i32, {3}), 0, 0);
  EXPECT_FLOAT_EQ(fo[1], std::exp(3.0f));
}

TEST(CpuKernelUnary, StridedBroadcastEmptyAndLarge) {
  cpu::CpuBackend be;
  // transposed input [4, 5] of a [5, 4] buffer
  std::vector<float> src = random_floats(20, -3, 3);
  std::vector<float> out(20);
  be.unary(UnaryOp::exp, targ(out, {4, 5}), targ(src, {4, 5}, {1, 4}), 0, 0);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j) EXPECT_TRUE(close(out[i * 5 + j], std::exp(src[j * 4 + i]), 3e-7));
  // broadcast input (stride 0) and size-0 / size-1 dims
  std::vector<float> one = {2.0f};
  be.unary(UnaryOp::neg, targ(out, {4, 5}), targ(one, {4, 5}, {0, 0}), 0, 0);
  for (float v : out) EXPECT_EQ(v, -2.0f);
  std::vector<float> empty;
  be.unary(UnaryOp::exp, targ(empty, {0, 3}), targ(empty, {0, 3}), 0, 0);
  std::vector<float> o1(1);
  be.unary(UnaryOp::sqrt, targ(o1, {}), targ(one, {}), 0, 0);
  EXPECT_FLOAT_EQ(o1[0], std::sqrt(2.0f));
  be.unary(UnaryOp::sqrt, targ(o1, {1, 1}), targ(one, {1, 1}, {5, 9}), 0, 0);
  EXPECT_FLOAT_EQ(o1[0], std::sqrt(2.0f));
  // large: the threaded path, contiguous and strided, in place
  const int64_t n = 300001;
  std::vector<float> big = random_floats(n, -10, 10), bo(n);
  for_each_isa([&](cpu::Isa) {
    be.unary(UnaryOp::tanh, targ(bo, {n}), targ(big, {n}), 0, 0);
    for (int64_t i = 0; i < n; i += 997) EXPECT_TRUE(close(bo[i], std::tanh(double(big[i])), 4e-7, 1e-45)) << i;
    be.unary(UnaryOp::rsqrt, targ(bo, {n / 2}), targ(big, {n / 2}, {2}), 0, 0);
    for (int64_t i = 0; i < n / 2; i += 991) EXPECT_TRUE(close(bo[i], 1 / std::sqrt(double(big[2 * i])), 2e-7));
    std::vector<float> inplace = big;
    be.unary(UnaryOp::relu, targ(inplace, {n}), targ(inplace, {n}), 0, 0);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(inplace[i], big[i] < 0 ? 0.0f : big[i]);
  });
}
