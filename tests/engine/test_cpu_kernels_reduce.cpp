// CPU backend reduce, softmax and index kernels called directly, against loops in double.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/engine/cpu_kernel_util.h"

using namespace kiln;
using namespace kiln::testing_cpu;

namespace {
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The reduced elements of each output, in row-major order of the reduced dims.
std::vector<std::vector<double>> groups(const std::vector<float>& data, const Shape& shape, const Strides& st,
                                        const Shape& out_shape) {
  std::vector<std::vector<double>> g(numel(out_shape));
  for (int64_t i = 0; i < numel(shape); ++i) {
    int64_t rem = i, o = 0, mul = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      int64_t c = rem % shape[d];
      rem /= shape[d];
      if (out_shape[d] != 1) o += c * mul;
      mul *= out_shape[d];
    }
    g[o].push_back(data[offset_of(i, shape, st)]);
  }
  return g;
}

double ref_reduce(ReduceOp op, const std::vector<double>& v, double corr) {
  double s = 0, p = 1, mx = -INFINITY, mn = INFINITY;
  int64_t amax = 0, amin = 0;
  bool nan = false;
  for (size_t i = 0; i < v.size(); ++i) {
    s += v[i], p *= v[i];
    if (std::isnan(v[i]) && !nan) nan = true, amax = amin = static_cast<int64_t>(i);
    if (!nan && v[i] > mx) mx = v[i], amax = static_cast<int64_t>(i);
    if (!nan && v[i] < mn) mn = v[i], amin = static_cast<int64_t>(i);
  }
  double mean = s / static_cast<double>(v.size()), m2 = 0;
  for (double x : v) m2 += (x - mean) * (x - mean);
  switch (op) {
    case ReduceOp::sum: return s;
    case ReduceOp::mean: return mean;
    case ReduceOp::prod: return p;
    case ReduceOp::max: return nan ? NAN : mx;
    case ReduceOp::min: return nan ? NAN : mn;
    case ReduceOp::argmax: return static_cast<double>(amax);
    case ReduceOp::argmin: return static_cast<double>(amin);
    case ReduceOp::var: return m2 / std::max(0.0, static_cast<double>(v.size()) - corr);
    default: return 0;
  }
}

void check_reduce(cpu::CpuBackend& be, ReduceOp op, const std::vector<float>& data, const Shape& shape,
                  const Strides& st, const Shape& out_shape, double corr = 1, double rtol = 2e-6) {
  auto g = groups(data, shape, st, out_shape);
  bool arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
  std::vector<float> out(g.size());
  std::vector<int64_t> iout(g.size());
  auto in = targ(const_cast<float*>(data.data()), DType::f32, shape, st);
  if (arg) be.reduce(op, targ(iout, out_shape), in, corr);
  else be.reduce(op, targ(out, out_shape), in, corr);
  for (size_t o = 0; o < g.size(); ++o) {
    double want = ref_reduce(op, g[o], corr);
    if (arg) ASSERT_EQ(iout[o], static_cast<int64_t>(want)) << reduce_op_name(op) << " output " << o;
    else ASSERT_TRUE(close(out[o], want, rtol, 1e-5)) << reduce_op_name(op) << " output " << o;
  }
}
}  // namespace

TEST(CpuKernelReduce, EveryOpEveryAxisSet) {
  cpu::CpuBackend be;
  const Shape shape = {3, 4, 5};
  std::vector<float> data = random_floats(60, 0.5f, 1.5f, 11);
  const std::vector<ReduceOp> ops = {ReduceOp::sum, ReduceOp::mean, ReduceOp::prod, ReduceOp::max,
                                     ReduceOp::min, ReduceOp::var, ReduceOp::argmax, ReduceOp::argmin};
  for (const Strides& st : {Strides{20, 5, 1}, Strides{1, 3, 12}}) {  // contiguous and permuted
    SCOPED_TRACE(st[0] == 1 ? "permuted" : "contiguous");
    for (int mask = 0; mask < 8; ++mask) {
      Shape out_shape = shape;
      for (int d = 0; d < 3; ++d)
        if (mask >> d & 1) out_shape[d] = 1;
      SCOPED_TRACE(shape_str(out_shape));
      for (ReduceOp op : ops)
        for (double corr : {0.0, 1.0}) check_reduce(be, op, data, shape, st, out_shape, corr);
    }
  }
}

TEST(CpuKernelReduce, LargeAndThreadedLayouts) {
  cpu::CpuBackend be;
  const int64_t n = 10'000'000;
  std::vector<float> tenth(n, 0.1f);
  std::vector<float> out(1);
  be.reduce(ReduceOp::sum, targ(out, {1}), targ(tenth, {n}), 0);
  EXPECT_TRUE(close(out[0], double(0.1f) * n, 2e-7));
  be.reduce(ReduceOp::mean, targ(out, {1}), targ(tenth, {n}), 0);
  EXPECT_TRUE(close(out[0], double(0.1f), 2e-7));
  // var of values far from 0 (cancellation) with correction 1
  std::vector<float> v = random_floats(1 << 20, -1, 1, 3);
  for (float& x : v) x += 1e4f;
  check_reduce(be, ReduceOp::var, v, {1 << 20}, {1}, {1}, 1, 1e-6);
  check_reduce(be, ReduceOp::argmax, v, {1 << 20}, {1}, {1});
  // rows x cols with each axis, and a few long rows (threads split each row)
  std::vector<float> m = random_floats(1000 * 700, -1, 1, 4);
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::argmin, ReduceOp::var}) {
    SCOPED_TRACE(reduce_op_name(op));
    check_reduce(be, op, m, {1000, 700}, {700, 1}, {1, 700});
    check_reduce(be, op, m, {1000, 700}, {700, 1}, {1000, 1});
    check_reduce(be, op, m, {700, 1000}, {1, 700}, {700, 1});  // transposed
    check_reduce(be, op, m, {4, 175000}, {175000, 1}, {4, 1});
    check_reduce(be, op, m, {100000, 7}, {7, 1}, {1, 7});
  }
}

TEST(CpuKernelReduce, TiesNaNEmptyAndDtypes) {
  cpu::CpuBackend be;
  std::vector<float> ties = {1, 3, 3, 2, 1};
  std::vector<int64_t> idx(1);
  be.reduce(ReduceOp::argmax, targ(idx, {1}), targ(ties, {5}), 0);
  EXPECT_EQ(idx[0], 1);
  be.reduce(ReduceOp::argmin, targ(idx, {1}), targ(ties, {5}), 0);
  EXPECT_EQ(idx[0], 0);
  std::vector<float> nan = {1, kNaN, 5, kNaN, 9}, out(1);
  be.reduce(ReduceOp::argmax, targ(idx, {1}), targ(nan, {5}), 0);
  EXPECT_EQ(idx[0], 1);
  be.reduce(ReduceOp::argmin, targ(idx, {1}), targ(nan, {5}), 0);
  EXPECT_EQ(idx[0], 1);
  be.reduce(ReduceOp::max, targ(out, {1}), targ(nan, {5}), 0);
  EXPECT_TRUE(std::isnan(out[0]));
  std::vector<float> longnan = random_floats(100000, -1, 1);
  longnan[77777] = kNaN;
  check_reduce(be, ReduceOp::min, longnan, {100000}, {1}, {1});
  check_reduce(be, ReduceOp::argmax, longnan, {100000}, {1}, {1});
  check_reduce(be, ReduceOp::argmin, longnan, {100, 1000}, {1000, 1}, {1, 1000});
  // empty reduced dim
  std::vector<float> none, o3(3, -1);
  be.reduce(ReduceOp::sum, targ(o3, {1, 3}), targ(none, {0, 3}), 0);
  EXPECT_EQ(o3, std::vector<float>(3, 0.0f));
  be.reduce(ReduceOp::prod, targ(o3, {1, 3}), targ(none, {0, 3}), 0);
  EXPECT_EQ(o3, std::vector<float>(3, 1.0f));
  be.reduce(ReduceOp::mean, targ(o3, {1, 3}), targ(none, {0, 3}), 0);
  EXPECT_TRUE(std::isnan(o3[0]));
  EXPECT_THROW(be.reduce(ReduceOp::max, targ(o3, {1, 3}), targ(none, {0, 3}), 0), IndexError);
  std::vector<int64_t> i3(3);
  try {
    be.reduce(ReduceOp::argmax, targ(i3, {1, 3}), targ(none, {0, 3}), 0);
    FAIL() << "no IndexError";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("argmax"), std::string::npos) << e.what();
  }
  // var of one element: 0 with correction 0, NaN with 1
  std::vector<float> one = {4};
  be.reduce(ReduceOp::var, targ(out, {1}), targ(one, {1}), 0);
  EXPECT_EQ(out[0], 0.0f);
  be.reduce(ReduceOp::var, targ(out, {1}), targ(one, {1}), 1);
  EXPECT_TRUE(std::isnan(out[0]));
  // no reduced dim: a copy; 0-d
  std::vector<float> two = {1, 2}, o2(2);
  be.reduce(ReduceOp::sum, targ(o2, {2}), targ(two, {2}), 0);
  EXPECT_EQ(o2, two);
  be.reduce(ReduceOp::max, targ(out, {}), targ(one, {}), 0);
  EXPECT_EQ(out[0], 4.0f);
  // integer and bool sums go to i64; int max; f64, bf16
  std::vector<int32_t> ints = {2000000000, 2000000000, -5};
  std::vector<int64_t> lsum(1);
  be.reduce(ReduceOp::sum, targ(lsum, {1}), targ(ints, {3}), 0);
  EXPECT_EQ(lsum[0], 3999999995LL);
  std::vector<int32_t> imax(1);
  be.reduce(ReduceOp::min, targ(imax, {1}), targ(ints, {3}), 0);
  EXPECT_EQ(imax[0], -5);
  std::vector<uint8_t> flags = {1, 0, 1, 1};
  be.reduce(ReduceOp::sum, targ(lsum, {1}), targ(flags.data(), DType::bool_, {4}), 0);
  EXPECT_EQ(lsum[0], 3);
  std::vector<double> dd = {1e308, 1e308, -1e308};
  std::vector<double> dout(1);
  be.reduce(ReduceOp::max, targ(dout, {1}), targ(dd, {3}), 0);
  EXPECT_EQ(dout[0], 1e308);
  std::vector<bfloat16> bf = {bfloat16(1.5f), bfloat16(2.5f), bfloat16(-1.0f)}, bo(1);
  be.reduce(ReduceOp::sum, targ(bo, {1}), targ(bf, {3}), 0);
  EXPECT_EQ(float(bo[0]), 3.0f);
}

// ---- softmax ----
namespace {
void ref_softmax(const std::vector<float>& x, std::vector<double>& y, const Shape& shape, int64_t dim, bool log) {
  int64_t outer = 1, n = shape[dim], inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  y.assign(x.size(), 0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < inner; ++c) {
      auto at = [&](int64_t i) { return (o * n + i) * inner + c; };
      double m = -INFINITY, s = 0;
      for (int64_t i = 0; i < n; ++i) m = std::max(m, double(x[at(i)]));
      for (int64_t i = 0; i < n; ++i) s += std::exp(x[at(i)] - m);
      for (int64_t i = 0; i < n; ++i) y[at(i)] = log ? x[at(i)] - m - std::log(s) : std::exp(x[at(i)] - m) / s;
    }
}
}  // namespace

TEST(CpuKernelSoftmax, ForwardBackwardEveryDim) {
  cpu::CpuBackend be;
  for (Shape shape : {Shape{4, 7, 5}, Shape{3, 2, 300}, Shape{2, 5000}, Shape{600, 3}}) {
    const int64_t n = numel(shape);
    std::vector<float> x = random_floats(n, -8, 8, 21), g = random_floats(n, -1, 1, 22);
    x[0] = 1000.0f;  // stability
    for_each_isa([&](cpu::Isa) {
      for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim)
        for (bool log : {false, true}) {
          SCOPED_TRACE(shape_str(shape) + " dim " + std::to_string(dim) + (log ? " log" : ""));
          std::vector<double> want;
          ref_softmax(x, want, shape, dim, log);
          std::vector<float> y(n), gi(n);
          be.softmax_forward(targ(y, shape), targ(x, shape), dim, log);
          // log_softmax = (x - max) - log(sum): float rounding of both terms, as torch's
          for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(close(y[i], want[i], 2e-6, log ? 2e-6 : 1e-7)) << i;
          // backward against the formula in double on the same y
          be.softmax_backward(targ(gi, shape), targ(g, shape), targ(y, shape), dim, log);
          int64_t outer = 1, len = shape[dim], inner = 1;
          for (int64_t d = 0; d < dim; ++d) outer *= shape[d];
          for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t c = 0; c < inner; ++c) {
              auto at = [&](int64_t i) { return (o * len + i) * inner + c; };
              double s = 0;
              for (int64_t i = 0; i < len; ++i) s += log ? g[at(i)] : double(g[at(i)]) * y[at(i)];
              for (int64_t i = 0; i < len; ++i) {
                double w = log ? g[at(i)] - std::exp(double(y[at(i)])) * s : y[at(i)] * (g[at(i)] - s);
                ASSERT_TRUE(close(gi[at(i)], w, 1e-5, 1e-6)) << at(i);
              }
            }
          // in place
          std::vector<float> z = x;
          be.softmax_forward(targ(z, shape), targ(z, shape), dim, log);
          for (int64_t i = 0; i < n; ++i) ASSERT_EQ(z[i], y[i]) << i;
        }
    });
  }
}

TEST(CpuKernelSoftmax, OtherDtypesAndStrided) {
  cpu::CpuBackend be;
  std::vector<double> x = {1, 2, 3, -1}, y(4);
  be.softmax_forward(targ(y, {4}), targ(x, {4}), 0, true);
  double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(-1.0));
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], x[i] - lse, 1e-14);
  std::vector<bfloat16> b = {bfloat16(0.0f), bfloat16(0.0f)}, bo(2);
  be.softmax_forward(targ(bo, {2}), targ(b, {2}), -1, false);
  EXPECT_EQ(float(bo[0]), 0.5f);
  // transposed input [3, 4] of a [4, 3] buffer, softmax over dim 1
  std::vector<float> t = random_floats(12, -2, 2), o(12), c(12);
  be.copy(targ(c, {3, 4}), targ(t, {3, 4}, {1, 3}));
  std::vector<double> want;
  ref_softmax(c, want, {3, 4}, 1, false);
  be.softmax_forward(targ(o, {3, 4}), targ(t, {3, 4}, {1, 3}), 1, false);
  for (int i = 0; i < 12; ++i) EXPECT_TRUE(close(o[i], want[i], 2e-6));
}

// ---- index ops ----
TEST(CpuKernelIndex, GatherAndScatterAdd) {
  cpu::CpuBackend be;
  std::vector<float> in = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};  // [2, 5]
  std::vector<int64_t> idx = {4, 0, 0, 1, 2, 3};               // [2, 3]
  std::vector<float> out(6);
  be.gather(targ(out, {2, 3}), targ(in, {2, 5}), 1, targ(idx, {2, 3}));
  EXPECT_EQ(out, (std::vector<float>{5, 1, 1, 7, 8, 9}));
  std::vector<int64_t> idx0 = {1, 0, 1};  // [1, 3] along dim 0
  std::vector<float> out0(3);
  be.gather(targ(out0, {1, 3}), targ(in, {2, 5}), 0, targ(idx0, {1, 3}));
  EXPECT_EQ(out0, (std::vector<float>{6, 2, 8}));
  // transposed input view [5, 2]
  be.gather(targ(out0, {3, 1}), targ(in, {5, 2}, {1, 5}), 0, targ(idx0, {3, 1}));
  EXPECT_EQ(out0, (std::vector<float>{2, 1, 2}));
  std::vector<int64_t> bad = {4, 0, 7, 1, 2, 3};
  try {
    be.gather(targ(out, {2, 3}), targ(in, {2, 5}), 1, targ(bad, {2, 3}));
    FAIL() << "no IndexError";
  } catch (const IndexError& e) {
    EXPECT_STREQ(e.what(), "gather: index 7 is out of range for dimension 1 of size 5");
  }
  bad[2] = -1;
  EXPECT_THROW(be.gather(targ(out, {2, 3}), targ(in, {2, 5}), 1, targ(bad, {2, 3})), IndexError);
  // scatter_add with repeated indices
  std::vector<float> acc(10, 0.0f), src = {1, 2, 3, 4, 5, 6};
  be.scatter_add(targ(acc, {2, 5}), 1, targ(idx, {2, 3}), targ(src, {2, 3}));
  EXPECT_EQ(acc, (std::vector<float>{5, 0, 0, 0, 1, 0, 4, 5, 6, 0}));
  std::vector<int64_t> iacc(4, 10), isrc = {1, 2, 3};
  std::vector<int64_t> sidx = {3, 3, 0};
  be.scatter_add(targ(iacc, {4}), 0, targ(sidx, {3}), targ(isrc, {3}));
  EXPECT_EQ(iacc, (std::vector<int64_t>{13, 10, 10, 13}));
  sidx[1] = 4;
  EXPECT_THROW(be.scatter_add(targ(iacc, {4}), 0, targ(sidx, {3}), targ(isrc, {3})), IndexError);
  EXPECT_EQ(iacc, (std::vector<int64_t>{13, 10, 10, 13}));  // untouched on error
}

TEST(CpuKernelIndex, IndexSelectAndIndexAdd) {
  cpu::CpuBackend be;
  const int64_t V = 50, D = 33, L = 1000;
  std::vector<float> table = random_floats(V * D, -1, 1, 31);
  std::vector<int64_t> idx(L);
  for (int64_t i = 0; i < L; ++i) idx[i] = (i * 7) % V;
  std::vector<float> rows(L * D);
  be.index_select(targ(rows, {L, D}), targ(table, {V, D}), 0, targ(idx, {L}));
  for (int64_t i = 0; i < L; ++i)
    for (int64_t d = 0; d < D; ++d) ASSERT_EQ(rows[i * D + d], table[idx[i] * D + d]);
  // dim 1 of a transposed view: the general (gather) path
  std::vector<float> cols(D * 3);
  std::vector<int64_t> three = {2, 49, 0};
  be.index_select(targ(cols, {D, 3}), targ(table, {D, V}, {1, D}), 1, targ(three, {3}));
  for (int64_t d = 0; d < D; ++d)
    for (int j = 0; j < 3; ++j) ASSERT_EQ(cols[d * 3 + j], table[three[j] * D + d]);
  std::vector<int64_t> oob = {0, 50};
  try {
    be.index_select(targ(cols, {2, D}), targ(table, {V, D}), 0, targ(oob, {2}));
    FAIL() << "no IndexError";
  } catch (const IndexError& e) {
    EXPECT_STREQ(e.what(), "index_select: index 50 is out of range for dimension 0 of size 50");
  }
  // index_add (embedding backward): repeated rows accumulate
  std::vector<float> grad(V * D, 0.0f), g = random_floats(L * D, -1, 1, 32);
  be.index_add(targ(grad, {V, D}), 0, targ(idx, {L}), targ(g, {L, D}));
  std::vector<double> want(V * D, 0.0);
  for (int64_t i = 0; i < L; ++i)
    for (int64_t d = 0; d < D; ++d) want[idx[i] * D + d] += g[i * D + d];
  for (int64_t k = 0; k < V * D; ++k) ASSERT_TRUE(close(grad[k], want[k], 1e-5, 1e-5)) << k;
  // general path: out is a transposed view
  std::vector<float> gt(V * D, 0.0f);
  be.index_add(targ(gt, {V, D}, {1, V}), 0, targ(idx, {L}), targ(g, {L, D}));
  for (int64_t v = 0; v < V; ++v)
    for (int64_t d = 0; d < D; ++d) ASSERT_EQ(gt[d * V + v], grad[v * D + d]);
  std::vector<int64_t> ia = {1, 1, 1}, is = {5, 6};
  std::vector<int64_t> two = {2, 2};
  be.index_add(targ(ia, {3}), 0, targ(two, {2}), targ(is, {2}));
  EXPECT_EQ(ia, (std::vector<int64_t>{1, 1, 12}));
}
