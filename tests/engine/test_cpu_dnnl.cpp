// The CPU backend's oneDNN-backed kernels (matmul, conv2d) and pooling, called
// directly and checked against naive double-precision loops written here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dnnl_context.h"
#include "engine/core/dtype.h"
#include "engine/core/error.h"

using namespace kiln;

namespace {

// A strided host tensor: storage of dtype `dtype` and a view (shape, strides, offset).
struct Host {
  DType dtype;
  Shape shape;
  Strides strides;
  int64_t offset = 0;
  std::vector<unsigned char> bytes;

  Host(DType dt, Shape s, Strides st = {}, int64_t off = 0)
      : dtype(dt), shape(std::move(s)), strides(st.empty() ? contiguous_strides(shape) : std::move(st)), offset(off) {
    int64_t n = offset + 1;
    for (size_t d = 0; d < shape.size(); ++d) n += (shape[d] - 1) * strides[d];
    bytes.resize(static_cast<size_t>(std::max<int64_t>(n, 1)) * dtype_size(dtype));
  }
  TensorArg arg() { return TensorArg{bytes.data(), offset, dtype, shape, strides}; }
  int64_t pos(const std::vector<int64_t>& idx) const {
    int64_t p = offset;
    for (size_t d = 0; d < idx.size(); ++d) p += idx[d] * strides[d];
    return p;
  }
  double raw(int64_t p) const {
    const unsigned char* b = bytes.data() + p * static_cast<int64_t>(dtype_size(dtype));
    switch (dtype) {
      case DType::f32: { float v; std::memcpy(&v, b, 4); return v; }
      case DType::f64: { double v; std::memcpy(&v, b, 8); return v; }
      case DType::i64: { int64_t v; std::memcpy(&v, b, 8); return static_cast<double>(v); }
      default: { uint16_t v; std::memcpy(&v, b, 2); return dtype == DType::f16 ? half_to_float(v) : bf16_to_float(v); }
    }
  }
  void set_raw(int64_t p, double x) {
    unsigned char* b = bytes.data() + p * static_cast<int64_t>(dtype_size(dtype));
    switch (dtype) {
      case DType::f32: { float v = static_cast<float>(x); std::memcpy(b, &v, 4); break; }
      case DType::f64: std::memcpy(b, &x, 8); break;
      case DType::i64: { int64_t v = static_cast<int64_t>(x); std::memcpy(b, &v, 8); break; }
      default: {
        uint16_t v = dtype == DType::f16 ? float_to_half(static_cast<float>(x)) : float_to_bf16(static_cast<float>(x));
        std::memcpy(b, &v, 2);
      }
    }
  }
  double at(const std::vector<int64_t>& idx) const { return raw(pos(idx)); }
  // Fills the whole storage (gaps included) with uniform values in [-1, 1).
  void randomize(std::mt19937& rng) {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int64_t p = 0; p < static_cast<int64_t>(bytes.size() / dtype_size(dtype)); ++p) set_raw(p, u(rng));
  }
  void fill(double x) {
    for (int64_t p = 0; p < static_cast<int64_t>(bytes.size() / dtype_size(dtype)); ++p) set_raw(p, x);
  }
};

void for_each_index(const Shape& shape, const std::function<void(const std::vector<int64_t>&)>& f) {
  if (numel(shape) == 0) return;
  std::vector<int64_t> idx(shape.size(), 0);
  while (true) {
    f(idx);
    size_t d = shape.size();
    while (d > 0 && ++idx[d - 1] == shape[d - 1]) idx[--d] = 0;
    if (d == 0) return;
  }
}

// Expects every element of got to be within tol * (1 + |want|) of want (indexed like got's shape).
void expect_near(const Host& got, const std::function<double(const std::vector<int64_t>&)>& want, double tol) {
  int bad = 0;
  for_each_index(got.shape, [&](const std::vector<int64_t>& i) {
    const double w = want(i), g = got.at(i);
    if (!(std::fabs(g - w) <= tol * (1 + std::fabs(w))) && bad++ < 5) ADD_FAILURE() << "at " << shape_str(i) << ": " << g << " vs " << w;
  });
  EXPECT_EQ(bad, 0);
}

// ---- matmul ----

struct MatSpec {
  Shape shape;
  Strides strides{};  // empty: contiguous
  int64_t offset = 0;
};

void check_matmul(DType dt, const MatSpec& as, const MatSpec& bs, const MatSpec& cs, double tol) {
  std::mt19937 rng(42);
  Host a(dt, as.shape, as.strides, as.offset), b(dt, bs.shape, bs.strides, bs.offset);
  Host c(dt, cs.shape, cs.strides, cs.offset);
  a.randomize(rng);
  b.randomize(rng);
  c.fill(7.0);  // garbage the kernel must overwrite
  cpu::CpuBackend be;
  be.matmul(c.arg(), a.arg(), b.arg());
  const size_t r = c.shape.size();
  const int64_t K = a.shape.back();
  expect_near(c, [&](const std::vector<int64_t>& i) {
    double s = 0;
    std::vector<int64_t> ia(i), ib(i);
    for (int64_t k = 0; k < K; ++k) {
      ia[r - 1] = k;
      ib[r - 2] = k;
      s += a.at(ia) * b.at(ib);
    }
    return s;
  }, tol);
}

TEST(CpuDnnlMatmul, TwoDimOddSizes) {
  check_matmul(DType::f32, {{17, 33}}, {{33, 5}}, {{17, 5}}, 1e-5);
  check_matmul(DType::f32, {{1, 7}}, {{7, 1}}, {{1, 1}}, 1e-5);
  check_matmul(DType::f32, {{64, 129}}, {{129, 96}}, {{64, 96}}, 1e-5);
}

TEST(CpuDnnlMatmul, Batched) {
  check_matmul(DType::f32, {{3, 17, 33}}, {{3, 33, 5}}, {{3, 17, 5}}, 1e-5);
  check_matmul(DType::f32, {{2, 3, 4, 6}}, {{2, 3, 6, 5}}, {{2, 3, 4, 5}}, 1e-5);
}

TEST(CpuDnnlMatmul, BroadcastBatch) {
  // a repeats along dim 0, b along dim 1 (stride 0), as ops.h hands them over.
  check_matmul(DType::f32, {{2, 3, 4, 6}, {0, 24, 6, 1}}, {{2, 3, 6, 5}, {30, 0, 5, 1}}, {{2, 3, 4, 5}}, 1e-5);
  check_matmul(DType::f32, {{4, 9, 7}, {0, 7, 1}}, {{4, 7, 3}}, {{4, 9, 3}}, 1e-5);
  check_matmul(DType::f64, {{2, 3, 4, 6}, {0, 24, 6, 1}}, {{2, 3, 6, 5}, {30, 0, 5, 1}}, {{2, 3, 4, 5}}, 1e-12);
}

TEST(CpuDnnlMatmul, TransposedOperands) {
  check_matmul(DType::f32, {{17, 33}, {1, 17}}, {{33, 5}}, {{17, 5}}, 1e-5);        // a^T
  check_matmul(DType::f32, {{17, 33}}, {{33, 5}, {1, 33}}, {{17, 5}}, 1e-5);        // b^T
  check_matmul(DType::f32, {{17, 33}, {1, 17}}, {{33, 5}, {1, 33}}, {{17, 5}}, 1e-5);  // both
  check_matmul(DType::f32, {{17, 33}}, {{33, 5}}, {{17, 5}, {1, 17}}, 1e-5);        // out^T
  check_matmul(DType::f32, {{3, 8, 6}, {48, 1, 8}}, {{3, 6, 5}, {30, 1, 6}}, {{3, 8, 5}}, 1e-5);
}

TEST(CpuDnnlMatmul, StridedAndOffset) {
  // Row stride past the row (a slice), an offset, and layouts with no unit stride at all.
  check_matmul(DType::f32, {{9, 7}, {10, 1}, 3}, {{7, 4}, {8, 1}, 5}, {{9, 4}, {6, 1}, 2}, 1e-5);
  check_matmul(DType::f32, {{9, 7}, {14, 2}, 1}, {{7, 4}, {1, 9}}, {{9, 4}}, 1e-5);
  check_matmul(DType::f32, {{2, 9, 7}, {1, 28, 4}}, {{2, 7, 4}, {60, 8, 2}}, {{2, 9, 4}, {1, 8, 2}}, 1e-5);
}

TEST(CpuDnnlMatmul, EmptyDims) {
  check_matmul(DType::f32, {{4, 0}}, {{0, 3}}, {{4, 3}}, 0);  // K = 0: zeros
  check_matmul(DType::f64, {{2, 4, 0}}, {{2, 0, 3}}, {{2, 4, 3}}, 0);
  check_matmul(DType::f32, {{0, 5}}, {{5, 3}}, {{0, 3}}, 0);
}

TEST(CpuDnnlMatmul, OtherDTypes) {
  check_matmul(DType::f64, {{17, 33}, {1, 17}}, {{33, 5}}, {{17, 5}}, 1e-12);
  check_matmul(DType::f64, {{3, 17, 33}}, {{3, 33, 5}, {165, 1, 33}}, {{3, 17, 5}}, 1e-12);
  check_matmul(DType::bf16, {{17, 33}}, {{33, 5}}, {{17, 5}}, 3e-2);
  check_matmul(DType::bf16, {{3, 17, 33}, {0, 1, 17}}, {{3, 33, 5}}, {{3, 17, 5}}, 3e-2);
  check_matmul(DType::f16, {{17, 33}}, {{33, 5}, {1, 33}}, {{17, 5}}, 5e-3);
}

TEST(CpuDnnlMatmul, PlansAreCachedAndErrorsThrown) {
  check_matmul(DType::f32, {{5, 6}}, {{6, 7}}, {{5, 7}}, 1e-5);
  const size_t n = cpu::plan_cache_size();
  check_matmul(DType::f32, {{5, 6}}, {{6, 7}}, {{5, 7}}, 1e-5);
  EXPECT_EQ(cpu::plan_cache_size(), n);
  cpu::CpuBackend be;
  Host a(DType::i64, {2, 2}), b(DType::i64, {2, 2}), c(DType::i64, {2, 2}), d(DType::f32, {2, 3});
  EXPECT_THROW(be.matmul(c.arg(), a.arg(), b.arg()), DTypeError);
  Host f(DType::f32, {2, 2});
  EXPECT_THROW(be.matmul(f.arg(), d.arg(), d.arg()), ShapeError);
}

// ---- conv2d ----

struct ConvCase {
  Shape x, w;
  Conv2dParams p;
  bool bias;
};

void check_conv(DType dt, const ConvCase& cc, double tol) {
  const int64_t N = cc.x[0], C = cc.x[1], H = cc.x[2], W = cc.x[3], O = cc.w[0], kH = cc.w[2], kW = cc.w[3];
  const int64_t G = cc.p.groups, Cg = C / G, Og = O / G;
  const auto& p = cc.p;
  const int64_t Ho = (H + 2 * p.padding[0] - p.dilation[0] * (kH - 1) - 1) / p.stride[0] + 1;
  const int64_t Wo = (W + 2 * p.padding[1] - p.dilation[1] * (kW - 1) - 1) / p.stride[1] + 1;
  std::mt19937 rng(7);
  Host x(dt, cc.x), w(dt, cc.w), b(dt, {O}), y(dt, {N, O, Ho, Wo}), gy(dt, {N, O, Ho, Wo});
  Host gx(dt, cc.x), gw(dt, cc.w), gb(dt, {O});
  for (Host* h : {&x, &w, &b, &gy}) h->randomize(rng);
  for (Host* h : {&y, &gx, &gw, &gb}) h->fill(5.0);
  cpu::CpuBackend be;
  TensorArg none{};
  be.conv2d_forward(y.arg(), x.arg(), w.arg(), cc.bias ? b.arg() : none, p);
  be.conv2d_backward_input(gx.arg(), gy.arg(), w.arg(), p);
  be.conv2d_backward_weight(gw.arg(), cc.bias ? gb.arg() : none, gy.arg(), x.arg(), p);

  // Reference: every (output, tap) pair once, scattered into all three results.
  std::vector<double> ry(static_cast<size_t>(N * O * Ho * Wo)), rgx(static_cast<size_t>(N * C * H * W));
  std::vector<double> rgw(static_cast<size_t>(O * Cg * kH * kW)), rgb(static_cast<size_t>(O));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < Ho; ++oh)
        for (int64_t ow = 0; ow < Wo; ++ow) {
          const size_t yi = static_cast<size_t>(((n * O + o) * Ho + oh) * Wo + ow);
          const double g = gy.at({n, o, oh, ow});
          ry[yi] = cc.bias ? b.at({o}) : 0.0;
          rgb[static_cast<size_t>(o)] += g;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < kH; ++kh)
              for (int64_t kw = 0; kw < kW; ++kw) {
                const int64_t ih = oh * p.stride[0] - p.padding[0] + kh * p.dilation[0];
                const int64_t iw = ow * p.stride[1] - p.padding[1] + kw * p.dilation[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const int64_t ci = o / Og * Cg + c;
                ry[yi] += x.at({n, ci, ih, iw}) * w.at({o, c, kh, kw});
                rgx[static_cast<size_t>(((n * C + ci) * H + ih) * W + iw)] += g * w.at({o, c, kh, kw});
                rgw[static_cast<size_t>(((o * Cg + c) * kH + kh) * kW + kw)] += g * x.at({n, ci, ih, iw});
              }
        }
  auto flat = [](const std::vector<double>& v, const Shape& s) {
    return [&v, s](const std::vector<int64_t>& i) {
      int64_t f = 0;
      for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + i[d];
      return v[static_cast<size_t>(f)];
    };
  };
  expect_near(y, flat(ry, y.shape), tol);
  expect_near(gx, flat(rgx, gx.shape), tol);
  expect_near(gw, flat(rgw, gw.shape), tol);
  if (cc.bias) expect_near(gb, flat(rgb, gb.shape), tol);
}

std::vector<ConvCase> conv_cases() {
  std::vector<ConvCase> v;
  v.push_back({{2, 3, 9, 7}, {4, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}, true});    // the CNN's conv
  v.push_back({{2, 4, 9, 8}, {6, 4, 3, 2}, {{2, 2}, {1, 0}, {1, 1}, 1}, true});    // stride 2, padding
  v.push_back({{2, 4, 11, 10}, {6, 2, 3, 3}, {{1, 2}, {2, 1}, {2, 2}, 2}, false});  // dilation 2, groups 2
  v.push_back({{1, 4, 8, 8}, {4, 2, 1, 1}, {{2, 2}, {0, 0}, {1, 1}, 2}, true});    // 1x1, groups, bias
  return v;
}

TEST(CpuDnnlConv, Float32) {
  for (const ConvCase& c : conv_cases()) check_conv(DType::f32, c, 1e-4);
}

TEST(CpuDnnlConv, Float64) {
  for (const ConvCase& c : conv_cases()) check_conv(DType::f64, c, 1e-12);
}

TEST(CpuDnnlConv, HalfTypes) {
  check_conv(DType::bf16, conv_cases()[1], 5e-2);
  check_conv(DType::f16, conv_cases()[2], 1e-2);
  check_conv(DType::f16, conv_cases()[3], 1e-2);  // with bias
}

// ---- pooling ----

int64_t pooled(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * pad - d * (k - 1) - 1;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pad) --out;
  return out;
}

void check_pool(DType dt, const Shape& xs, const Pool2dParams& p, double tol) {
  const int64_t H = xs[2], W = xs[3];
  const int64_t Ho = pooled(H, p.kernel[0], p.stride[0], p.padding[0], p.dilation[0], p.ceil_mode);
  const int64_t Wo = pooled(W, p.kernel[1], p.stride[1], p.padding[1], p.dilation[1], p.ceil_mode);
  const Shape ys{xs[0], xs[1], Ho, Wo};
  std::mt19937 rng(3);
  Host x(dt, xs), gy(dt, ys), y(dt, ys), idx(DType::i64, ys), gx(dt, xs), ay(dt, ys), agx(dt, xs);
  x.randomize(rng);
  gy.randomize(rng);
  for (Host* h : {&y, &gx, &ay, &agx, &idx}) h->fill(9.0);
  cpu::CpuBackend be;
  be.max_pool2d_forward(y.arg(), idx.arg(), x.arg(), p);
  be.max_pool2d_backward(gx.arg(), gy.arg(), idx.arg());
  Pool2dParams q = p;
  q.dilation[0] = q.dilation[1] = 1;
  be.avg_pool2d_forward(ay.arg(), x.arg(), q);
  be.avg_pool2d_backward(agx.arg(), gy.arg(), q);

  std::vector<double> rgx(static_cast<size_t>(numel(xs))), ragx(rgx.size());
  auto xi = [&](const std::vector<int64_t>& i, int64_t h, int64_t w) { return ((i[0] * xs[1] + i[1]) * H + h) * W + w; };
  for_each_index(ys, [&](const std::vector<int64_t>& i) {
    // max: the first maximum of the window, scanned row by row
    double best = -INFINITY;
    int64_t arg = -1;
    for (int64_t kh = 0; kh < p.kernel[0]; ++kh)
      for (int64_t kw = 0; kw < p.kernel[1]; ++kw) {
        const int64_t h = i[2] * p.stride[0] - p.padding[0] + kh * p.dilation[0];
        const int64_t w = i[3] * p.stride[1] - p.padding[1] + kw * p.dilation[1];
        if (h < 0 || h >= H || w < 0 || w >= W) continue;
        if (x.at({i[0], i[1], h, w}) > best) best = x.at({i[0], i[1], h, w}), arg = h * W + w;
      }
    EXPECT_EQ(y.at(i), best);
    EXPECT_EQ(static_cast<int64_t>(idx.at(i)), arg);
    rgx[static_cast<size_t>(xi(i, arg / W, arg % W))] += gy.at(i);
    // avg: the window clipped to the padded input, the divisor as PyTorch counts it
    const int64_t h0 = i[2] * q.stride[0] - q.padding[0], w0 = i[3] * q.stride[1] - q.padding[1];
    const int64_t h1 = std::min(h0 + q.kernel[0], H + q.padding[0]), w1 = std::min(w0 + q.kernel[1], W + q.padding[1]);
    int64_t count = 0;
    double sum = 0;
    for (int64_t h = std::max<int64_t>(h0, 0); h < std::min(h1, H); ++h)
      for (int64_t w = std::max<int64_t>(w0, 0); w < std::min(w1, W); ++w) sum += x.at({i[0], i[1], h, w}), ++count;
    const double div = q.count_include_pad ? static_cast<double>((h1 - h0) * (w1 - w0)) : static_cast<double>(count);
    EXPECT_NEAR(ay.at(i), sum / div, tol * (1 + std::fabs(sum / div)));
    for (int64_t h = std::max<int64_t>(h0, 0); h < std::min(h1, H); ++h)
      for (int64_t w = std::max<int64_t>(w0, 0); w < std::min(w1, W); ++w)
        ragx[static_cast<size_t>(xi(i, h, w))] += gy.at(i) / div;
  });
  expect_near(gx, [&](const std::vector<int64_t>& i) { return rgx[static_cast<size_t>(xi(i, i[2], i[3]))]; }, tol);
  expect_near(agx, [&](const std::vector<int64_t>& i) { return ragx[static_cast<size_t>(xi(i, i[2], i[3]))]; }, tol);
}

TEST(CpuDnnlPool, MaxAndAvg) {
  check_pool(DType::f32, {2, 3, 8, 8}, {{2, 2}, {2, 2}, {0, 0}, {1, 1}, false, true}, 1e-6);  // the CNN's pool
  check_pool(DType::f32, {2, 3, 9, 7}, {{3, 2}, {2, 2}, {1, 1}, {1, 1}, false, true}, 1e-6);
  check_pool(DType::f64, {1, 2, 9, 7}, {{3, 3}, {2, 2}, {1, 0}, {1, 1}, true, false}, 1e-12);   // ceil_mode
  check_pool(DType::f64, {1, 2, 10, 11}, {{3, 3}, {3, 2}, {1, 1}, {2, 1}, true, true}, 1e-12);  // dilation
  check_pool(DType::bf16, {2, 2, 7, 7}, {{2, 2}, {2, 2}, {1, 1}, {1, 1}, true, false}, 2e-2);
  check_pool(DType::f16, {2, 2, 6, 5}, {{2, 3}, {1, 2}, {0, 1}, {1, 1}, false, true}, 5e-3);
}

TEST(CpuDnnlPool, MaxPropagatesNaN) {
  cpu::CpuBackend be;
  Host x(DType::f32, {1, 1, 2, 2}), y(DType::f32, {1, 1, 1, 1}), idx(DType::i64, {1, 1, 1, 1});
  x.fill(1.0);
  x.set_raw(2, NAN);
  Pool2dParams p;
  p.kernel[0] = p.kernel[1] = p.stride[0] = p.stride[1] = 2;
  be.max_pool2d_forward(y.arg(), idx.arg(), x.arg(), p);
  EXPECT_TRUE(std::isnan(y.at({0, 0, 0, 0})));
  EXPECT_EQ(idx.at({0, 0, 0, 0}), 2);
}

TEST(CpuDnnlPool, BadIndexThrows) {
  cpu::CpuBackend be;
  Host gx(DType::f32, {1, 1, 2, 2}), gy(DType::f32, {1, 1, 1, 1}), idx(DType::i64, {1, 1, 1, 1});
  idx.fill(4);
  EXPECT_THROW(be.max_pool2d_backward(gx.arg(), gy.arg(), idx.arg()), IndexError);
}

}  // namespace
