// CPU backend binary, where, copy, fill and adam_step kernels called directly.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/engine/cpu_kernel_util.h"

using namespace kiln;
using namespace kiln::testing_cpu;

namespace {
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

double ref_binary(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::add: return a + b;
    case BinaryOp::sub: return a - b;
    case BinaryOp::mul: return a * b;
    case BinaryOp::div: return a / b;
    case BinaryOp::pow: return std::pow(a, b);
    case BinaryOp::maximum: return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
    case BinaryOp::minimum: return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
    case BinaryOp::eq: return a == b;
    case BinaryOp::ne: return a != b;
    case BinaryOp::lt: return a < b;
    case BinaryOp::le: return a <= b;
    case BinaryOp::gt: return a > b;
    case BinaryOp::ge: return a >= b;
    case BinaryOp::logical_and: return a != 0 && b != 0;
    case BinaryOp::logical_or: return a != 0 || b != 0;
    default: return 0;
  }
}
}  // namespace

// Every op on f32, with b contiguous, a broadcast row, a scalar, and a transposed view.
TEST(CpuKernelBinary, EveryOpF32WithBroadcasting) {
  cpu::CpuBackend be;
  const int64_t R = 37, C = 41;
  std::vector<float> a = random_floats(R * C, -4, 4, 3), b = random_floats(R * C, -4, 4, 4);
  a[5] = kNaN, b[9] = kNaN, a[11] = kInf, b[12] = 0.0f, a[13] = b[13];
  for (int i = 20; i < 30; ++i) b[i] = std::round(b[i]);  // integral exponents for pow of negatives
  struct View { const char* name; Strides st; int64_t (*at)(int64_t i, int64_t j); int64_t offset = 0; };
  std::vector<View> views = {
      {"contiguous", {C, 1}, [](int64_t i, int64_t j) { return i * 41 + j; }},
      {"row", {0, 1}, [](int64_t, int64_t j) { return j; }},
      {"column", {1, 0}, [](int64_t i, int64_t) { return i; }},
      {"scalar", {0, 0}, [](int64_t, int64_t) { return int64_t{13}; }, 13},
      {"transposed", {1, R}, [](int64_t i, int64_t j) { return j * 37 + i; }},
  };
  for_each_isa([&](cpu::Isa) {
    for (int o = 0; o < static_cast<int>(BinaryOp::count); ++o) {
      BinaryOp op = static_cast<BinaryOp>(o);
      SCOPED_TRACE(binary_op_name(op));
      for (const View& va : views)
        for (const View& vb : views) {
          SCOPED_TRACE(std::string(va.name) + " x " + vb.name);
          std::vector<float> out(R * C);
          std::vector<uint8_t> bout(R * C);
          TensorArg ta = targ(a, {R, C}, va.st, va.offset), tb = targ(b, {R, C}, vb.st, vb.offset);
          bool cmp = is_comparison(op);
          if (cmp) be.binary(op, targ(bout.data(), DType::bool_, {R, C}), ta, tb);
          else be.binary(op, targ(out, {R, C}), ta, tb);
          int bad = 0;
          for (int64_t i = 0; i < R && bad < 3; ++i)
            for (int64_t j = 0; j < C && bad < 3; ++j) {
              double x = a[va.at(i, j)], y = b[vb.at(i, j)];
              double want = cmp ? ref_binary(op, x, y) : static_cast<float>(ref_binary(op, x, y));
              double got = cmp ? bout[i * C + j] : out[i * C + j];
              auto r = close(got, want, op == BinaryOp::pow ? 3e-7 : 0, 1e-45);
              bad += !r;
              EXPECT_TRUE(r) << x << " op " << y;
            }
        }
    }
  });
}

TEST(CpuKernelBinary, IntegerSemantics) {
  cpu::CpuBackend be;
  const int32_t mn = std::numeric_limits<int32_t>::min(), mx = std::numeric_limits<int32_t>::max();
  std::vector<int32_t> a = {-7, 7, mn, mx, 2, -2, 1, -1, 3}, b = {2, -2, -1, 1, 10, 3, -5, -3, 0};
  std::vector<int32_t> out(9);
  be.binary(BinaryOp::add, targ(out, {8}), targ(a, {8}), targ(b, {8}));
  EXPECT_EQ(out[3], mn);  // wraps
  be.binary(BinaryOp::div, targ(out, {8}), targ(a, {8}), targ(b, {8}));
  EXPECT_EQ(out[0], -3);  // truncation toward zero
  EXPECT_EQ(out[1], -3);
  EXPECT_EQ(out[2], mn);  // INT_MIN / -1 wraps instead of trapping
  EXPECT_THROW(be.binary(BinaryOp::div, targ(out, {9}), targ(a, {9}), targ(b, {9})), ValueError);
  be.binary(BinaryOp::pow, targ(out, {8}), targ(a, {8}), targ(b, {8}));
  EXPECT_EQ(out[0], 49);
  EXPECT_EQ(out[4], 1024);
  EXPECT_EQ(out[5], -8);
  EXPECT_EQ(out[6], 1);   // 1 ** -5
  EXPECT_EQ(out[7], -1);  // -1 ** -3
  EXPECT_EQ(out[1], 0);   // 7 ** -2
  be.binary(BinaryOp::maximum, targ(out, {8}), targ(a, {8}), targ(b, {8}));
  EXPECT_EQ(out, (std::vector<int32_t>{2, 7, -1, mx, 10, 3, 1, -1, 0}));
  std::vector<int64_t> l = {5, -6}, lb = {3};
  std::vector<int64_t> lo(2);
  be.binary(BinaryOp::mul, targ(lo, {2}), targ(l, {2}), targ(lb, {2}, {0}));
  EXPECT_EQ(lo, (std::vector<int64_t>{15, -18}));
  std::vector<uint8_t> u = {200, 10}, ub = {100, 20}, uo(2), cmp(2);
  be.binary(BinaryOp::add, targ(uo, {2}), targ(u, {2}), targ(ub, {2}));
  EXPECT_EQ(uo, (std::vector<uint8_t>{44, 30}));
  be.binary(BinaryOp::lt, targ(cmp.data(), DType::bool_, {2}), targ(u, {2}), targ(ub, {2}));
  EXPECT_EQ(cmp, (std::vector<uint8_t>{0, 1}));
  std::vector<uint8_t> p = {0, 0, 1, 1}, q = {0, 1, 0, 1}, r(4);
  be.binary(BinaryOp::logical_and, targ(r.data(), DType::bool_, {4}), targ(p.data(), DType::bool_, {4}),
            targ(q.data(), DType::bool_, {4}));
  EXPECT_EQ(r, (std::vector<uint8_t>{0, 0, 0, 1}));
  be.binary(BinaryOp::logical_or, targ(r.data(), DType::bool_, {4}), targ(p.data(), DType::bool_, {4}),
            targ(q.data(), DType::bool_, {4}));
  EXPECT_EQ(r, (std::vector<uint8_t>{0, 1, 1, 1}));
  // mismatched dtypes are the front end's bug: DTypeError
  EXPECT_THROW(be.binary(BinaryOp::add, targ(lo, {2}), targ(l, {2}), targ(u, {2})), DTypeError);
}

TEST(CpuKernelBinary, HalfTypesF64AndLarge) {
  cpu::CpuBackend be;
  std::vector<bfloat16> a = {bfloat16(1.5f), bfloat16(-2.0f)}, b = {bfloat16(0.25f), bfloat16(3.0f)}, o(2);
  be.binary(BinaryOp::mul, targ(o, {2}), targ(a, {2}), targ(b, {2}));
  EXPECT_EQ(float(o[0]), 0.375f);
  EXPECT_EQ(float(o[1]), -6.0f);
  std::vector<half> h = {half(1.5f), half(-2.0f)}, hb = {half(0.25f)}, ho(2);
  be.binary(BinaryOp::add, targ(ho, {2}), targ(h, {2}), targ(hb, {2}, {0}));
  EXPECT_EQ(float(ho[0]), 1.75f);
  EXPECT_EQ(float(ho[1]), -1.75f);
  std::vector<double> d = {1.0, 2.0}, db = {3.0, 0.0}, dout(2);
  be.binary(BinaryOp::div, targ(dout, {2}), targ(d, {2}), targ(db, {2}));
  EXPECT_DOUBLE_EQ(dout[0], 1.0 / 3.0);
  EXPECT_TRUE(std::isinf(dout[1]));
  // large, threaded: [n/1000, 1000] + row bias, and a contiguous mul
  const int64_t rows = 301, cols = 1000;
  std::vector<float> x = random_floats(rows * cols, -1, 1), bias = random_floats(cols, -1, 1), y(rows * cols);
  for_each_isa([&](cpu::Isa) {
    be.binary(BinaryOp::add, targ(y, {rows, cols}), targ(x, {rows, cols}), targ(bias, {rows, cols}, {0, 1}));
    for (int64_t i = 0; i < rows * cols; ++i) ASSERT_EQ(y[i], x[i] + bias[i % cols]) << i;
    be.binary(BinaryOp::mul, targ(y, {rows * cols}), targ(x, {rows * cols}), targ(x, {rows * cols}));
    for (int64_t i = 0; i < rows * cols; ++i) ASSERT_EQ(y[i], x[i] * x[i]) << i;
  });
}

TEST(CpuKernelWhere, SelectsWithBroadcasting) {
  cpu::CpuBackend be;
  std::vector<uint8_t> c = {1, 0, 0, 1, 1, 0};
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {-1}, o(6);
  be.where(targ(o, {2, 3}), targ(c.data(), DType::bool_, {2, 3}), targ(a, {2, 3}), targ(b, {2, 3}, {0, 0}));
  EXPECT_EQ(o, (std::vector<float>{1, -1, -1, 4, 5, -1}));
  std::vector<int64_t> la = {1, 2, 3, 4, 5, 6}, lb = {10, 20, 30, 40, 50, 60}, lo(6);
  be.where(targ(lo, {2, 3}), targ(c.data(), DType::bool_, {2, 3}), targ(la, {2, 3}), targ(lb, {2, 3}));
  EXPECT_EQ(lo, (std::vector<int64_t>{1, 20, 30, 4, 5, 60}));
  be.where(targ(lo, {2, 3}), targ(c.data(), DType::bool_, {2, 3}, {0, 1}), targ(la, {2, 3}), targ(lb, {2, 3}));
  EXPECT_EQ(lo, (std::vector<int64_t>{1, 20, 30, 4, 50, 60}));
}

TEST(CpuKernelCopy, ConvertsDtypes) {
  cpu::CpuBackend be;
  std::vector<float> f = {-2.7f, -0.5f, 0.5f, 2.7f, 1e9f};
  std::vector<int32_t> i(5);
  be.copy(targ(i, {4}), targ(f, {4}));
  EXPECT_EQ(i, (std::vector<int32_t>{-2, 0, 0, 2, 0}));  // truncation toward zero
  std::vector<float> g = {1.0f, 1.00390625f, 1.01171875f, -3.140625f, kInf, kNaN};
  std::vector<bfloat16> bf(6);
  std::vector<float> back(6);
  be.copy(targ(bf, {6}), targ(g, {6}));
  be.copy(targ(back, {6}), targ(bf, {6}));
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], 1.0f);          // 1 + 2^-8 ties to even
  EXPECT_EQ(back[2], 1.015625f);     // 1 + 3*2^-8 ties to even (up)
  EXPECT_EQ(back[3], -3.140625f);
  EXPECT_TRUE(std::isinf(back[4]));
  EXPECT_TRUE(std::isnan(back[5]));
  std::vector<float> z = {0.0f, -0.0f, kNaN, 0.5f};
  std::vector<uint8_t> bl(4);
  be.copy(targ(bl.data(), DType::bool_, {4}), targ(z, {4}));
  EXPECT_EQ(bl, (std::vector<uint8_t>{0, 0, 1, 1}));
  std::vector<double> d(4);
  be.copy(targ(d, {4}), targ(bl.data(), DType::bool_, {4}));
  EXPECT_EQ(d, (std::vector<double>{0, 0, 1, 1}));
  std::vector<int64_t> l = {-3, 70000, 2048};
  std::vector<half> h(3);
  be.copy(targ(h, {3}), targ(l, {3}));
  EXPECT_EQ(float(h[0]), -3.0f);
  EXPECT_TRUE(std::isinf(float(h[1])));
  EXPECT_EQ(float(h[2]), 2048.0f);
  std::vector<uint8_t> u(3);
  std::vector<int8_t> s8 = {-1, 5, -128};
  be.copy(targ(u, {3}), targ(s8, {3}));
  EXPECT_EQ(u, (std::vector<uint8_t>{255, 5, 128}));
}

TEST(CpuKernelCopy, StridedTransposedBroadcastAndLarge) {
  cpu::CpuBackend be;
  for (auto [R, C] : {std::pair<int64_t, int64_t>{3, 5}, {300, 217}, {1000, 700}}) {
    std::vector<float> src = random_floats(R * C, -1, 1), dst(R * C);
    be.copy(targ(dst, {C, R}), targ(src, {C, R}, {1, C}));  // dst = src.t()
    for (int64_t i = 0; i < C; ++i)
      for (int64_t j = 0; j < R; ++j) ASSERT_EQ(dst[i * R + j], src[j * C + i]);
    std::vector<double> dd(R * C);  // with conversion
    be.copy(targ(dd, {C, R}), targ(src, {C, R}, {1, C}));
    for (int64_t k = 0; k < R * C; k += 7) ASSERT_EQ(dd[k], double(dst[k]));
  }
  // batched transpose [2, 40, 30] -> [2, 30, 40]
  std::vector<int64_t> s(2 * 40 * 30), t(2 * 40 * 30);
  for (size_t k = 0; k < s.size(); ++k) s[k] = static_cast<int64_t>(k);
  be.copy(targ(t, {2, 30, 40}), targ(s, {2, 30, 40}, {1200, 1, 30}));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 30; ++i)
      for (int64_t j = 0; j < 40; ++j) ASSERT_EQ(t[b * 1200 + i * 40 + j], s[b * 1200 + j * 30 + i]);
  std::vector<float> one = {4.5f}, row = {1, 2, 3}, out(6);
  be.copy(targ(out, {2, 3}), targ(row, {2, 3}, {0, 1}));
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, 1, 2, 3}));
  be.copy(targ(out, {3}, {2}, 1), targ(one, {3}, {0}));  // into a strided view
  EXPECT_EQ(out, (std::vector<float>{1, 4.5f, 3, 4.5f, 2, 4.5f}));
  std::vector<float> empty;
  be.copy(targ(empty, {0, 4}), targ(empty, {0, 4}));
}

TEST(CpuKernelFill, AllDtypesAndStrided) {
  cpu::CpuBackend be;
  std::vector<float> f(6);
  be.fill(targ(f, {6}), 2.5);
  EXPECT_EQ(f, std::vector<float>(6, 2.5f));
  be.fill(targ(f, {2}, {3}, 1), -1);
  EXPECT_EQ(f, (std::vector<float>{2.5f, -1, 2.5f, 2.5f, -1, 2.5f}));
  std::vector<int32_t> i(3);
  be.fill(targ(i, {3}), 3.7);
  EXPECT_EQ(i, std::vector<int32_t>(3, 3));
  std::vector<uint8_t> b(3);
  be.fill(targ(b.data(), DType::bool_, {3}), 0.5);
  EXPECT_EQ(b, std::vector<uint8_t>(3, 1));
  std::vector<bfloat16> h(2);
  be.fill(targ(h, {2}), -0.75);
  EXPECT_EQ(float(h[1]), -0.75f);
  std::vector<double> big(200000);
  be.fill(targ(big, {200000}), 1e300);
  for (double v : big) ASSERT_EQ(v, 1e300);
}

// torch.optim.Adam/AdamW's _single_tensor_adam, one element at a time in float.
static void adam_reference(std::vector<float>& p, const std::vector<float>& g0, std::vector<float>& m,
                           std::vector<float>& v, const AdamParams& ap) {
  double bc1 = 1 - std::pow(ap.beta1, double(ap.step)), bc2 = 1 - std::pow(ap.beta2, double(ap.step));
  for (size_t i = 0; i < p.size(); ++i) {
    float g = g0[i];
    if (ap.decoupled) p[i] *= float(1 - ap.lr * ap.weight_decay);
    else if (ap.weight_decay != 0) g = g + float(ap.weight_decay) * p[i];
    m[i] = m[i] + float(1 - ap.beta1) * (g - m[i]);
    v[i] = v[i] * float(ap.beta2) + float(1 - ap.beta2) * g * g;
    float denom = std::sqrt(v[i]) / float(std::sqrt(bc2)) + float(ap.eps);
    p[i] = p[i] + float(-(ap.lr / bc1)) * m[i] / denom;
  }
}

TEST(CpuKernelAdam, MatchesTorchFormula) {
  cpu::CpuBackend be;
  for (bool decoupled : {false, true})
    for (int64_t n : {int64_t{7}, int64_t{100003}}) {
      SCOPED_TRACE(std::string(decoupled ? "AdamW n=" : "Adam n=") + std::to_string(n));
      std::vector<float> p = random_floats(n, -1, 1, 5), m(n), v(n), rp = p, rm(n), rv(n);
      AdamParams ap;
      ap.lr = 1e-2;
      ap.weight_decay = 0.05;
      ap.decoupled = decoupled;
      for (int step = 1; step <= 5; ++step) {
        std::vector<float> g = random_floats(n, -1, 1, 100 + step);
        ap.step = step;
        be.adam_step(targ(p, {n}), targ(g, {n}), targ(m, {n}), targ(v, {n}), ap);
        adam_reference(rp, g, rm, rv, ap);
      }
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(close(p[i], rp[i], 2e-6, 1e-7)) << i;
        ASSERT_TRUE(close(m[i], rm[i], 2e-6, 1e-7)) << i;  // m + w (g - m) cancels: |g| ulps
        ASSERT_TRUE(close(v[i], rv[i], 2e-6, 1e-9)) << i;
      }
      EXPECT_NE(p[0], random_floats(n, -1, 1, 5)[0]);  // it moved
    }
  std::vector<float> p(3), g(2);
  EXPECT_THROW(be.adam_step(targ(p, {3}), targ(g, {2}), targ(p, {3}), targ(p, {3}), AdamParams{}), ShapeError);
}
