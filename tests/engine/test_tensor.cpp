#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"

using namespace kiln;

namespace {
Tensor iota(const Shape& s, DType t = DType::f32) {
  std::vector<double> v(static_cast<size_t>(numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return Tensor::from_vector(v, s).to(t);
}
std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }
}  // namespace

TEST(Tensor, CreationAndReadBack) {
  Tensor z = Tensor::zeros({2, 3});
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  EXPECT_EQ(values(z), std::vector<float>(6, 0.0f));
  EXPECT_EQ(Tensor::full({2}, 7.5, DType::f64).to_vector<double>(), (std::vector<double>{7.5, 7.5}));
  EXPECT_EQ(Tensor::arange(4).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(Tensor::scalar(3).dim(), 0);
  EXPECT_FLOAT_EQ(Tensor::scalar(3).item<float>(), 3.0f);
  EXPECT_THROW(Tensor::from_vector(std::vector<float>{1, 2, 3}, {2, 2}), ShapeError);
  EXPECT_THROW(Tensor::zeros({2, 3}).item<float>(), ValueError);
}

TEST(Tensor, ViewsShareStorage) {
  Tensor x = iota({2, 3, 4});
  Tensor t = x.transpose(0, 2);
  EXPECT_EQ(t.shape(), (Shape{4, 3, 2}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.impl()->storage, x.impl()->storage);
  Tensor s = x.slice(2, 1, 4, 2);  // columns 1 and 3
  EXPECT_EQ(s.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(values(s.contiguous()), (std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23}));
  Tensor e = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3, 1}).expand({3, 4});
  EXPECT_EQ(e.strides()[1], 0);
  EXPECT_EQ(values(e.contiguous())[5], 2.0f);
  EXPECT_EQ(x.unsqueeze(1).shape(), (Shape{2, 1, 3, 4}));
  EXPECT_EQ(x.unsqueeze(1).squeeze(1).shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(x.flatten(1).shape(), (Shape{2, 12}));
  EXPECT_EQ(x.select(1, 2).shape(), (Shape{2, 4}));
  EXPECT_EQ(values(x.select(1, 2))[0], 8.0f);
  // writing through a view changes the base
  x.slice(0, 1, 2).fill_(-1);
  EXPECT_EQ(values(x)[12], -1.0f);
  EXPECT_EQ(values(x)[11], 11.0f);
}

TEST(Tensor, ReshapeViewsWhenPossibleAndCopiesOtherwise) {
  Tensor x = iota({4, 6});
  Tensor r = x.reshape({2, 2, 6});
  EXPECT_EQ(r.impl()->storage, x.impl()->storage);
  Tensor t = x.t();
  EXPECT_THROW(t.view({24}), ShapeError);
  Tensor tr = t.reshape({24});  // copies
  EXPECT_NE(tr.impl()->storage, x.impl()->storage);
  EXPECT_EQ(values(tr)[1], 6.0f);
  EXPECT_EQ(x.reshape({-1, 3}).shape(), (Shape{8, 3}));
  EXPECT_THROW(x.reshape({5, -1}), ShapeError);
  // a transposed-then-split view is still a view: [6,4] -> [6,2,2]
  Tensor v = t.reshape({6, 2, 2});
  EXPECT_EQ(v.impl()->storage, x.impl()->storage);
}

TEST(Tensor, BroadcastingArithmetic) {
  Tensor a = iota({2, 3});
  Tensor b = Tensor::from_vector(std::vector<float>{10, 20, 30}, {3});
  EXPECT_EQ(values(a + b), (std::vector<float>{10, 21, 32, 13, 24, 35}));
  EXPECT_EQ(values(a * 2.0), (std::vector<float>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(values(1.0 - a)[5], -4.0f);
  Tensor col = Tensor::from_vector(std::vector<float>{1, 2}, {2, 1});
  EXPECT_EQ((a / col).shape(), (Shape{2, 3}));
  EXPECT_THROW(a + Tensor::zeros({4}), ShapeError);
  try {
    a* Tensor::zeros({4});
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("mul"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("[4]"), std::string::npos);
  }
}

TEST(Tensor, TypePromotionAsPyTorch) {
  Tensor i = Tensor::arange(3);                       // i64
  EXPECT_EQ((i + 1.0).dtype(), DType::i64);           // integral scalar keeps the type
  EXPECT_EQ((i * 0.5).dtype(), DType::f32);           // float scalar -> default float
  EXPECT_EQ((i / i).dtype(), DType::f32);             // true division
  EXPECT_EQ((i + Tensor::zeros({3}, DType::f64)).dtype(), DType::f64);
  Tensor h = Tensor::zeros({3}, DType::f16);
  EXPECT_EQ((h + Tensor::scalar(1, DType::f64)).dtype(), DType::f16);  // 0-d does not widen
  EXPECT_EQ((h + Tensor::zeros({3}, DType::bf16)).dtype(), DType::f32);
  EXPECT_EQ(lt(i, i).dtype(), DType::bool_);
  EXPECT_EQ(exp(i).dtype(), DType::f32);
  EXPECT_EQ(sum(Tensor::ones({3}, DType::bool_)).dtype(), DType::i64);
  EXPECT_EQ(sum(Tensor::ones({3}, DType::bool_)).item<int64_t>(), 3);
  EXPECT_THROW(mean(i), DTypeError);
}

TEST(Tensor, ReductionsOverAxes) {
  Tensor x = iota({2, 3, 4});
  EXPECT_FLOAT_EQ(sum(x).item<float>(), 276.0f);
  EXPECT_EQ(sum(x, {0, 2}).shape(), (Shape{3}));
  EXPECT_EQ(values(sum(x, {0, 2})), (std::vector<float>{60, 92, 124}));
  EXPECT_EQ(sum(x, {-1}, true).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(values(amax(x, {1})), (std::vector<float>{8, 9, 10, 11, 20, 21, 22, 23}));
  EXPECT_EQ(argmax(x, 2).to_vector<int64_t>(), std::vector<int64_t>(6, 3));
  EXPECT_NEAR(var(Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {4})).item<float>(), 1.6666666f, 1e-6);
  Tensor big = Tensor::full({1000, 1000}, 0.1);
  EXPECT_NEAR(sum(big).item<float>(), 100000.0f, 1.0f);
  EXPECT_NEAR(logsumexp(Tensor::from_vector(std::vector<float>{1000, 1000}, {2}), {0}).item<float>(),
              1000.0f + std::log(2.0f), 1e-3);
}

TEST(Tensor, MatmulShapesAndErrors) {
  Tensor a = iota({2, 3}), b = iota({3, 4});
  Tensor c = matmul(a, b);
  EXPECT_EQ(c.shape(), (Shape{2, 4}));
  EXPECT_EQ(values(c), (std::vector<float>{20, 23, 26, 29, 56, 68, 80, 92}));
  EXPECT_EQ(matmul(iota({5, 2, 3}), b).shape(), (Shape{5, 2, 4}));
  EXPECT_EQ(matmul(iota({3}), b).shape(), (Shape{4}));
  EXPECT_EQ(matmul(a, iota({3})).shape(), (Shape{2}));
  EXPECT_EQ(values(matmul(a.t().contiguous().t(), b)), values(c));  // strided operand
  try {
    matmul(a, a);
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos);
  }
}

TEST(Tensor, DevicesAndErrors) {
  EXPECT_THROW(resolve_device("cuda:7"), DeviceError);
  EXPECT_THROW(resolve_device("gpu"), DeviceError);
  EXPECT_EQ(resolve_device("cpu"), Device());
  auto devices = list_devices();
  ASSERT_FALSE(devices.empty());
  // The CPU is always listed, and the list is sorted best score first.
  EXPECT_TRUE(std::any_of(devices.begin(), devices.end(), [](const DeviceInfo& d) { return d.device == Device(); }));
  for (size_t i = 1; i < devices.size(); ++i) EXPECT_GE(devices[i - 1].score, devices[i].score);
  EXPECT_THROW(Tensor::zeros({2}, DType::f32, Device(DeviceType::vulkan, 3)), DeviceError);
}

TEST(Tensor, SeededRandomIsReproducible) {
  Generator g1(42), g2(42);
  EXPECT_EQ(values(normal({100}, 0, 1, DType::f32, {}, &g1)), values(normal({100}, 0, 1, DType::f32, {}, &g2)));
  auto p = randperm(50, {}, &g1).to_vector<int64_t>();
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(sorted[i], i);
  Tensor u = uniform({10000}, -2, 3, DType::f32, {}, &g1);
  EXPECT_GE(amin(u).item<float>(), -2.0f);
  EXPECT_LT(amax(u).item<float>(), 3.0f);
  EXPECT_NEAR(mean(u).item<float>(), 0.5f, 0.05f);
  Tensor bern = bernoulli({10000}, 0.3, DType::f32, {}, &g1);
  EXPECT_NEAR(mean(bern).item<float>(), 0.3f, 0.02f);
  std::string state = g1.state();
  float next = uniform({1}, 0, 1, DType::f32, {}, &g1).item<float>();
  g2.set_state(state);
  EXPECT_EQ(uniform({1}, 0, 1, DType::f32, {}, &g2).item<float>(), next);
}

// bernoulli is counter-based (random.h): one generator draw per call, the same mask on any
// number of threads, and bernoulli_scaled is the same draw times its value.
TEST(Tensor, BernoulliIsCounterBased) {
  const int threads = omp_get_max_threads();
  Generator a(7), b(7), c(7);
  omp_set_num_threads(1);
  const std::vector<float> one = bernoulli({1 << 18}, 0.1, DType::f32, {}, &a).to_vector<float>();
  omp_set_num_threads(2);
  const std::vector<float> two = bernoulli({1 << 18}, 0.1, DType::f32, {}, &b).to_vector<float>();
  omp_set_num_threads(threads);
  EXPECT_EQ(one, two);
  double kept = 0;
  for (float v : one) kept += v;
  EXPECT_NEAR(kept / static_cast<double>(one.size()), 0.1, 0.003);  // 5 standard deviations: 0.0029
  EXPECT_EQ(a.state(), b.state());
  bernoulli({3}, 0.5, DType::f32, {}, &c);  // any size takes one draw
  EXPECT_EQ(a.state(), c.state());
  Generator d(7);
  const std::vector<double> scaled = bernoulli_scaled({1 << 18}, 0.1, 2.5, DType::f64, {}, &d).to_vector<double>();
  for (size_t i = 0; i < one.size(); ++i) ASSERT_EQ(scaled[i], 2.5 * one[i]) << i;
  Generator e(7);
  const std::vector<float> bf = bernoulli({1 << 10}, 0.1, DType::bf16, {}, &e).to_vector<float>();
  EXPECT_TRUE(std::equal(bf.begin(), bf.end(), one.begin()));  // other dtypes: the same elements
  for (double p : {0.0, 1.0}) {
    const std::vector<float> all = bernoulli({4096}, p, DType::f32, {}, &e).to_vector<float>();
    EXPECT_TRUE(std::all_of(all.begin(), all.end(), [&](float v) { return v == static_cast<float>(p); })) << p;
  }
  EXPECT_THROW(bernoulli({2}, 1.5), ValueError);
}

TEST(Tensor, DtypeErrorsNameTheOp) {
  Tensor b = Tensor::ones({2}, DType::bool_);
  EXPECT_THROW(neg(b), DTypeError);
  EXPECT_THROW(Tensor::arange(3).requires_grad_(), DTypeError);
  EXPECT_THROW(where(Tensor::ones({2}), b, b), DTypeError);
  EXPECT_THROW(index_select(Tensor::ones({3}), 0, Tensor::ones({1})), DTypeError);
}

TEST(Tensor, SmallBatchMatmulMatchesF64) {
  // M <= 4 takes the backend's row-at-a-time path; both weight layouts, odd sizes.
  Generator gen(3);
  for (int64_t m : {1, 3, 4, 5})
    for (bool transposed : {true, false}) {
      Tensor a = normal({m, 37}, 0, 1, DType::f32, {}, &gen);
      Tensor w = normal({23, 37}, 0, 1, DType::f32, {}, &gen);
      Tensor b = transposed ? w.t() : w.t().contiguous();
      std::vector<double> want = matmul(a.to(DType::f64), b.to(DType::f64)).to_vector<double>();
      std::vector<float> got = matmul(a, b).to_vector<float>();
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << m << " " << transposed;
    }
  Tensor big = normal({2, 784}, 0, 1, DType::f32, {}, &gen), w = normal({300, 784}, 0, 1, DType::f32, {}, &gen);
  std::vector<double> want = matmul(big.to(DType::f64), w.t().to(DType::f64)).to_vector<double>();
  std::vector<float> got = matmul(big, w.t()).to_vector<float>();  // the threaded split
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-3);
}
