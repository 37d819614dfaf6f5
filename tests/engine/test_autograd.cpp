#include <gtest/gtest.h>

#include <cmath>

#include "engine/autograd/backward.h"
#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"

using namespace kiln;

namespace {
Tensor leaf(std::vector<double> v, const Shape& s) { return Tensor::from_vector(v, s).requires_grad_(); }
std::vector<double> grad_of(const Tensor& t) { return t.grad().to_vector<double>(); }
}  // namespace

TEST(Autograd, ChainRuleThroughBroadcasting) {
  Tensor a = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = leaf({10, 20, 30}, {3});
  Tensor y = sum(mul(a, b));
  y.backward();
  EXPECT_EQ(grad_of(a), (std::vector<double>{10, 20, 30, 10, 20, 30}));
  EXPECT_EQ(grad_of(b), (std::vector<double>{5, 7, 9}));
}

TEST(Autograd, ThroughViews) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = sum(mul(x.t().slice(0, 0, 3, 2), Tensor::from_vector(std::vector<double>{1, 2}, {2})));
  y.backward();
  // x.t() is [3,2]; rows 0 and 2 of it are x[:,0] and x[:,2]; weights 1 (x[0,.]) and 2 (x[1,.])
  EXPECT_EQ(grad_of(x), (std::vector<double>{1, 0, 1, 2, 0, 2}));
  Tensor z = leaf({1, 2, 3}, {3});
  sum(z.unsqueeze(0).expand({4, 3}).reshape({12})).backward();
  EXPECT_EQ(grad_of(z), (std::vector<double>{4, 4, 4}));
}

TEST(Autograd, AccumulatesAcrossBackwardCalls) {
  Tensor x = leaf({1, 2}, {2});
  sum(mul(x, x)).backward();
  sum(mul(x, x)).backward();
  EXPECT_EQ(grad_of(x), (std::vector<double>{4, 8}));
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, SameInputTwiceAndDiamond) {
  Tensor x = leaf({3}, {1});
  Tensor a = mul(x, x), b = exp(x);
  sum(add(a, mul(a, b))).backward();  // d/dx (x^2 + x^2 e^x) = 2x + (2x + x^2) e^x
  double e3 = std::exp(3.0);
  EXPECT_NEAR(grad_of(x)[0], 6 + 15 * e3, 1e-9 * e3);
}

TEST(Autograd, NoGradAndDetach) {
  Tensor x = leaf({1, 2}, {2});
  {
    NoGradGuard guard;
    Tensor y = mul(x, x);
    EXPECT_FALSE(y.requires_grad());
  }
  Tensor d = x.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_THROW(sum(mul(d, d)).backward(), ValueError);
  Tensor y = add(mul(x, x), mul(x.detach(), x.detach()));
  sum(y).backward();
  EXPECT_EQ(grad_of(x), (std::vector<double>{2, 4}));
}

TEST(Autograd, NonScalarNeedsGradOutput) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 3.0;
  EXPECT_THROW(y.backward(), ValueError);
  y.backward(Tensor::from_vector(std::vector<double>{1, 10}, {2}));
  EXPECT_EQ(grad_of(x), (std::vector<double>{3, 30}));
  EXPECT_THROW((x * 2.0).backward(Tensor::ones({3}, DType::f64)), ShapeError);
}

TEST(Autograd, IntegerResultsAreNotDifferentiable) {
  Tensor x = leaf({1, 5, 2}, {3});
  EXPECT_FALSE(argmax(x, 0).requires_grad());
  EXPECT_FALSE(gt(x, x).requires_grad());
}

// Slices of one intermediate tensor (as an RNN's per-step input projections) have their
// gradients added into one buffer in place (engine/autograd/backward.cpp): overlapping and
// strided slices, selects, a non-slice consumer of the same tensor before and after them, and
// a slice of a slice must all still sum correctly, and the user's grad_output is never written.
TEST(Autograd, ManySlicesOfOneTensorAccumulate) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {6});
  Tensor y = mul(x, x);  // dy/dx = 2x
  Tensor parts = add(sum(mul(y.slice(0, 0, 4), scalar_like(3, y))), sum(y.slice(0, 2, 6)));
  parts = add(parts, sum(y.slice(0, 1, 6, 2)));                  // elements 1, 3, 5
  parts = add(parts, mul(y.select(0, 5), scalar_like(10, y)));   // element 5
  parts = add(parts, sum(y.slice(0, 1, 5).slice(0, 1, 3)));      // elements 2, 3
  parts = add(parts, sum(mul(y, y)));                            // d/dy = 2y
  parts.backward();
  // d parts / d y_i: 3 (i < 4) + 1 (i >= 2) + 1 (odd) + 10 (i = 5) + 1 (i = 2, 3) + 2 y_i.
  const std::vector<double> xs = {1, 2, 3, 4, 5, 6};
  const std::vector<double> dy_extra = {3, 4, 5, 6, 1, 12};
  std::vector<double> want;
  for (size_t i = 0; i < xs.size(); ++i) want.push_back((dy_extra[i] + 2 * xs[i] * xs[i]) * 2 * xs[i]);
  EXPECT_EQ(grad_of(x), want);

  Tensor z = leaf({1, 2, 3, 4}, {2, 2});
  Tensor w = mul(z, scalar_like(2, z));
  Tensor g = Tensor::from_vector<double>({1, 1}, {2});
  stack({w.select(0, 0), w.select(0, 1)}, 0).sum().backward();
  w.select(1, 0).backward(g);
  EXPECT_EQ(grad_of(z), (std::vector<double>{4, 2, 4, 2}));
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{1, 1}));
}
