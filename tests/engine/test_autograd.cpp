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
