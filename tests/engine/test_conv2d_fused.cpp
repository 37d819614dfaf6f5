// conv2d_fused (engine/core/ops.h): the CPU's one-kernel convolution with its epilogue
// (cpu_conv.cpp, Note [Conv epilogue]) against the composed conv2d, add and activation, for
// every epilogue, strides, groups, with and without bias; the decomposition on a dtype the
// kernel lacks (f64) and where a gradient is needed; and its errors.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"

using namespace kiln;

namespace {

Tensor composed(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& z, const Conv2dParams& p,
                const ConvEpilogue& e) {
  Tensor y = conv2d(x, w, b, p);
  if (e.residual) y = add(y, z);
  if (e.activation == ConvActivation::relu) y = apply_unary(UnaryOp::relu, y);
  if (e.activation == ConvActivation::clip) y = clamp(y, e.lo, e.hi);
  if (e.activation == ConvActivation::hardswish) y = apply_unary(UnaryOp::hardswish, y);
  if (e.activation == ConvActivation::silu) y = apply_unary(UnaryOp::silu, y);
  return y;
}

// max |a - b| / max |b|
double rel_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> va = a.to(DType::f64).to_vector<double>(), vb = b.to(DType::f64).to_vector<double>();
  EXPECT_EQ(va.size(), vb.size());
  double scale = 0, diff = 0;
  for (size_t i = 0; i < va.size() && i < vb.size(); ++i) {
    scale = std::max(scale, std::abs(vb[i]));
    diff = std::max(diff, std::abs(va[i] - vb[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

struct Geometry {
  int64_t n, c, h, w, o, k, stride, pad, groups;
  bool bias;
};

}  // namespace

TEST(Conv2dFused, MatchesTheComposedOpsForEveryEpilogue) {
  ASSERT_TRUE(backend_for(Device())->supports(OpId::conv2d_fused_forward, DType::f32));
  EXPECT_FALSE(backend_for(Device())->supports(OpId::conv2d_fused_forward, DType::f64));
  const std::vector<Geometry> geometries = {
      {2, 3, 9, 9, 8, 3, 1, 1, 1, true},     {1, 16, 14, 14, 32, 1, 1, 0, 1, false},
      {2, 8, 11, 10, 8, 3, 2, 1, 8, false},  {1, 24, 7, 7, 24, 5, 1, 2, 24, true},
      {3, 4, 6, 6, 6, 3, 2, 0, 2, true},
  };
  std::vector<ConvEpilogue> epilogues;
  for (bool residual : {false, true}) {
    for (ConvActivation a : {ConvActivation::none, ConvActivation::relu, ConvActivation::clip,
                             ConvActivation::hardswish, ConvActivation::silu}) {
      ConvEpilogue e;
      e.activation = a;
      e.residual = residual;
      if (a == ConvActivation::clip) e.lo = 0, e.hi = 6;
      epilogues.push_back(e);
    }
  }
  ConvEpilogue odd_clip;  // other bounds than ReLU6: the kernel takes any
  odd_clip.activation = ConvActivation::clip;
  odd_clip.lo = -0.5f;
  odd_clip.hi = 0.25f;
  epilogues.push_back(odd_clip);
  manual_seed(3);
  for (const Geometry& g : geometries) {
    Conv2dParams p;
    p.stride[0] = p.stride[1] = g.stride;
    p.padding[0] = p.padding[1] = g.pad;
    p.groups = g.groups;
    const Tensor x = normal({g.n, g.c, g.h, g.w}, 0, 2);
    const Tensor w = normal({g.o, g.c / g.groups, g.k, g.k}, 0, 0.5);
    const Tensor b = g.bias ? normal({g.o}, 0, 1) : Tensor();
    const Tensor plain = conv2d(x, w, b, p);
    const Tensor z = normal(plain.shape(), 0, 3);
    for (const ConvEpilogue& e : epilogues) {
      const Tensor r = e.residual ? z : Tensor();
      const Tensor want = composed(x, w, b, r, p, e);
      const Tensor got = conv2d_fused(x, w, b, r, p, e);
      EXPECT_EQ(got.shape(), want.shape());
      // 1e-5: the fused plan is an inference one, for which oneDNN may pick another kernel
      // (brgconv) than conv2d's, summing in another order (2e-6 seen for a 5x5 depthwise conv)
      EXPECT_LE(rel_diff(got, want), 1e-5) << "in " << shape_str(x.shape()) << " w " << shape_str(w.shape())
                                           << " act " << int(e.activation) << " residual " << e.residual;
      // the f64 decomposition gives the same numbers as the composed f64 ops
      const Tensor r64 = e.residual ? z.to(DType::f64) : Tensor();
      const Tensor b64 = b.defined() ? b.to(DType::f64) : Tensor();
      EXPECT_EQ(rel_diff(conv2d_fused(x.to(DType::f64), w.to(DType::f64), b64, r64, p, e),
                         composed(x.to(DType::f64), w.to(DType::f64), b64, r64, p, e)),
                0.0);
    }
  }
}

TEST(Conv2dFused, NonContiguousInputsAndAResidualView) {
  manual_seed(5);
  const Tensor x = normal({2, 9, 9, 4}, 0, 1).permute({0, 3, 1, 2});  // [2, 4, 9, 9], channels last
  const Tensor w = normal({6, 4, 3, 3}, 0, 0.5);
  Conv2dParams p;
  p.padding[0] = p.padding[1] = 1;
  const Tensor z = normal({2, 9, 9, 6}, 0, 1).permute({0, 3, 1, 2});
  ConvEpilogue e;
  e.activation = ConvActivation::relu;
  e.residual = true;
  EXPECT_LE(rel_diff(conv2d_fused(x, w, Tensor(), z, p, e), composed(x, w, Tensor(), z, p, e)), 1e-5);
}

namespace {
bool channels_last(const Tensor& t) {
  const Shape& n = t.shape();
  return t.dim() == 4 && t.strides() == Strides{n[1] * n[2] * n[3], 1, n[3] * n[1], n[1]};
}
}  // namespace

// Note [Channels last]: the fused kernel writes NHWC, reads NHWC or NCHW input and residual, and
// the CPU's elementwise ops keep NHWC between two convolutions, with the numbers of the NCHW ops.
TEST(Conv2dFused, ChannelsLastFromOneConvolutionToTheNext) {
  manual_seed(8);
  Conv2dParams p;
  p.padding[0] = p.padding[1] = 1;
  ConvEpilogue relu;
  relu.activation = ConvActivation::relu;
  const Tensor x = normal({2, 5, 8, 7}, 0, 1);
  const Tensor w1 = normal({16, 5, 3, 3}, 0, 0.5), b1 = normal({16}, 0, 1);
  const Tensor y1 = conv2d_fused(x, w1, b1, Tensor(), p, relu);
  EXPECT_TRUE(channels_last(y1));
  EXPECT_LE(rel_diff(y1, composed(x, w1, b1, Tensor(), p, relu)), 1e-5);

  // elementwise ops: the output takes the layout of an input of its shape, whichever operand it is
  const Tensor scale = normal({1, 16, 1, 1}, 1, 0.1);
  const Tensor y2 = mul(scale, sigmoid(y1));
  EXPECT_TRUE(channels_last(y2));
  const Tensor y1c = y1.contiguous();
  EXPECT_TRUE(y1c.is_contiguous());
  EXPECT_EQ(rel_diff(y2, mul(scale, sigmoid(y1c))), 0.0);
  const Tensor mixed = sub(y1c, y2);  // a contiguous first operand, a channels-last second one
  EXPECT_EQ(rel_diff(mixed, sub(y1c, y2.contiguous())), 0.0);

  // the next convolution reads it without a copy; a residual in either layout
  const Tensor w2 = normal({16, 1, 3, 3}, 0, 0.5);  // depthwise
  Conv2dParams dw = p;
  dw.groups = 16;
  ConvEpilogue add_relu = relu;
  add_relu.residual = true;
  for (const Tensor& z : {y1, y1c}) {
    const Tensor y3 = conv2d_fused(y2, w2, Tensor(), z, dw, add_relu);
    EXPECT_TRUE(channels_last(y3));
    EXPECT_LE(rel_diff(y3, composed(y2.contiguous(), w2, Tensor(), z.contiguous(), dw, add_relu)), 1e-5);
  }
  // an output of one pixel is NCHW and NHWC at once: contiguous
  Conv2dParams whole;
  const Tensor y4 = conv2d_fused(y2, normal({4, 16, 8, 7}, 0, 0.1), Tensor(), Tensor(), whole, relu);
  EXPECT_EQ(y4.shape(), (Shape{2, 4, 1, 1}));
  EXPECT_TRUE(y4.is_contiguous());
}

TEST(Conv2dFused, WhereAGradientIsNeededItRecordsTheComposedOps) {
  manual_seed(6);
  Tensor x = normal({1, 2, 5, 5}, 0, 1);
  Tensor w = normal({3, 2, 3, 3}, 0, 0.5).requires_grad_();
  ConvEpilogue e;
  e.activation = ConvActivation::relu;
  const Tensor y = conv2d_fused(x, w, Tensor(), Tensor(), Conv2dParams{}, e);
  EXPECT_TRUE(y.requires_grad());
}

TEST(Conv2dFused, ResidualOfAnotherShapeOrAMissingOneIsAnError) {
  const Tensor x = Tensor::zeros({1, 2, 5, 5}), w = Tensor::zeros({3, 2, 3, 3});
  ConvEpilogue e;
  e.residual = true;
  EXPECT_THROW(conv2d_fused(x, w, Tensor(), Tensor::zeros({1, 3, 1, 1}), Conv2dParams{}, e), ShapeError);
  EXPECT_THROW(conv2d_fused(x, w, Tensor(), Tensor(), Conv2dParams{}, e), ValueError);
  e.residual = false;
  EXPECT_THROW(conv2d_fused(x, w, Tensor(), Tensor::zeros({1, 3, 3, 3}), Conv2dParams{}, e), ValueError);
  e.activation = ConvActivation::clip;
  e.lo = 1;
  e.hi = 0;
  EXPECT_THROW(conv2d_fused(x, w, Tensor(), Tensor(), Conv2dParams{}, e), ValueError);
}
