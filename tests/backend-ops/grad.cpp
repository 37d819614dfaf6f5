// --mode=grad: forward values and gradients through the autograd front end, on the device
// vs the CPU: loss = sum(f(inputs) * w) with a fixed random w, backward, then every input's
// grad compared by NMSE (threshold 1e-8; the backward kernels are f32).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/nn/functional.h"
#include "tests/backend-ops/harness.h"
#include "tests/common/unary_op_cases.h"

namespace kiln::backend_ops {

namespace {
struct GradCase {
  std::string name;
  std::vector<Shape> shapes;
  std::function<Tensor(const std::vector<Tensor>&)> f;
  bool positive = false;  // inputs in (0.2, 2) instead of (-2, 2)
  std::vector<bool> differentiable;  // default: all
};

double nmse(const Tensor& ref, const Tensor& got) {
  auto r = ref.to(DType::f32).to_vector<float>(), g = got.to(Device()).to(DType::f32).to_vector<float>();
  double num = 0, den = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    if (std::isnan(r[i]) != std::isnan(g[i])) return INFINITY;
    if (std::isnan(r[i])) continue;
    num += (double(r[i]) - g[i]) * (double(r[i]) - g[i]);
    den += double(r[i]) * r[i];
  }
  return den > 0 ? num / den : num;
}

std::vector<GradCase> grad_cases() {
  namespace F = nn::F;
  using V = const std::vector<Tensor>&;
  std::vector<GradCase> v;
  const Shape s{5, 7};
  for (const op_cases::UnaryOpCase& c : op_cases::unary_op_cases()) {
    if (!op_cases::unary_op_differentiable(c.op)) continue;
    v.push_back({op_cases::case_name(c), {s}, [c](V x) { return op_cases::apply_unary(c, x[0]); }, c.low >= 0, {}});
  }
  v.push_back({"square", {s}, [](V x) { return square(x[0]); }, false, {}});
  v.push_back({"gelu_tanh", {s}, [](V x) { return gelu(x[0], "tanh"); }, false, {}});
  v.push_back({"add_broadcast", {{5, 1}, s}, [](V x) { return add(x[0], x[1]); }, false, {}});
  v.push_back({"sub", {s, s}, [](V x) { return sub(x[0], x[1]); }, false, {}});
  v.push_back({"mul_broadcast", {{7}, s}, [](V x) { return mul(x[0], x[1]); }, false, {}});
  v.push_back({"div", {s, s}, [](V x) { return div(x[0], x[1]); }, true, {}});
  v.push_back({"pow", {s, s}, [](V x) { return pow(x[0], x[1]); }, true, {}});
  v.push_back({"maximum", {s, s}, [](V x) { return maximum(x[0], x[1]); }, false, {}});
  v.push_back({"minimum", {s, s}, [](V x) { return minimum(x[0], x[1]); }, false, {}});
  v.push_back({"where", {s, s}, [](V x) { return where(gt(x[0], x[1]), x[0], mul(x[1], x[1])); }, false, {}});
  v.push_back({"sum_dims", {{4, 5, 6}}, [](V x) { return sum(x[0], {0, 2}, true); }, false, {}});
  v.push_back({"mean", {{4, 5, 6}}, [](V x) { return mean(x[0], {1}); }, false, {}});
  v.push_back({"prod", {{4, 5}}, [](V x) { return prod(x[0], {1}); }, true, {}});
  v.push_back({"amax", {{4, 9}}, [](V x) { return amax(x[0], {1}); }, false, {}});
  v.push_back({"amin", {{4, 9}}, [](V x) { return amin(x[0], {0}); }, false, {}});
  v.push_back({"var", {{6, 9}}, [](V x) { return var(x[0], {1}); }, false, {}});
  v.push_back({"logsumexp", {{6, 9}}, [](V x) { return logsumexp(x[0], {1}); }, false, {}});
  v.push_back({"matmul", {{9, 13}, {13, 6}}, [](V x) { return matmul(x[0], x[1]); }, false, {}});
  v.push_back({"matmul_batched", {{3, 9, 13}, {13, 6}}, [](V x) { return matmul(x[0], x[1]); }, false, {}});
  v.push_back({"matmul_transposed", {{13, 9}, {6, 13}}, [](V x) { return matmul(x[0].t(), x[1].t()); }, false, {}});
  v.push_back({"linear", {{8, 20}, {12, 20}, {12}}, [](V x) { return linear(x[0], x[1], x[2]); }, false, {}});
  Conv2dParams c1;
  c1.padding[0] = c1.padding[1] = 1;
  v.push_back({"conv2d", {{2, 3, 9, 8}, {4, 3, 3, 3}, {4}}, [c1](V x) { return conv2d(x[0], x[1], x[2], c1); },
               false, {}});
  Conv2dParams c2;
  c2.stride[0] = c2.stride[1] = 2;
  c2.groups = 2;
  v.push_back({"conv2d_stride_groups", {{2, 4, 9, 9}, {6, 2, 3, 3}, {6}},
               [c2](V x) { return conv2d(x[0], x[1], x[2], c2); }, false, {}});
  ConvTranspose2dParams t2;  // the conv2d input-gradient and forward kernels with x and g swapped
  t2.stride[0] = t2.stride[1] = 2;
  t2.padding[0] = t2.padding[1] = 1;
  t2.output_padding[0] = t2.output_padding[1] = 1;
  t2.groups = 2;
  v.push_back({"conv_transpose2d_stride_groups", {{2, 4, 5, 6}, {4, 3, 3, 3}, {6}},
               [t2](V x) { return conv_transpose2d(x[0], x[1], x[2], t2); }, false, {}});
  Pool2dParams p2;
  p2.kernel[0] = p2.kernel[1] = 2;
  p2.stride[0] = p2.stride[1] = 2;
  v.push_back({"max_pool2d", {{2, 3, 8, 6}}, [p2](V x) { return max_pool2d(x[0], p2); }, false, {}});
  Pool2dParams p3;
  p3.kernel[0] = p3.kernel[1] = 3;
  p3.stride[0] = p3.stride[1] = 2;
  p3.padding[0] = p3.padding[1] = 1;
  v.push_back({"avg_pool2d", {{2, 3, 9, 7}}, [p3](V x) { return avg_pool2d(x[0], p3); }, false, {}});
  v.push_back({"adaptive_avg_pool2d", {{2, 3, 9, 7}}, [](V x) { return adaptive_avg_pool2d(x[0], {2, 3}); }, false, {}});
  v.push_back({"softmax", {{6, 10}}, [](V x) { return softmax(x[0], 1); }, false, {}});
  v.push_back({"log_softmax", {{6, 10}}, [](V x) { return log_softmax(x[0], 1); }, false, {}});
  v.push_back({"softmax_dim0", {{7, 5, 3}}, [](V x) { return softmax(x[0], 0); }, false, {}});
  v.push_back({"gather", {{5, 7}}, [](V x) {
                 Tensor idx = Tensor::from_vector<int64_t>({0, 3, 1, 1, 6, 2}, {1, 6}).to(x[0].device());
                 return gather(x[0], 1, idx.expand({5, 6}).contiguous());
               }, false, {}});
  v.push_back({"index_select", {{5, 7}}, [](V x) {
                 Tensor idx = Tensor::from_vector<int64_t>({4, 0, 4, 2}, {4}).to(x[0].device());
                 return index_select(x[0], 0, idx);
               }, false, {}});
  v.push_back({"cross_entropy", {{8, 10}}, [](V x) {
                 Tensor t = Tensor::from_vector<int64_t>({1, 0, 9, 3, 3, 7, 2, 5}, {8}).to(x[0].device());
                 return F::cross_entropy(x[0], t);
               }, false, {}});
  v.push_back({"layer_norm", {{4, 12}, {12}, {12}}, [](V x) { return F::layer_norm(x[0], {12}, x[1], x[2]); }, false,
               {}});
  v.push_back({"batch_norm_train", {{6, 3, 4, 4}, {3}, {3}}, [](V x) {
                 return F::batch_norm(x[0], Tensor(), Tensor(), x[1], x[2], true);
               }, false, {}});
  v.push_back({"batch_norm_train_running_odd", {{5, 4, 3, 3}, {4}, {4}}, [](V x) {  // 9 values a plane: no 4-wide loads
                 Tensor rm = Tensor::zeros({4}).to(x[0].device()), rv = Tensor::ones({4}).to(x[0].device());
                 return F::batch_norm(x[0], rm, rv, x[1], x[2], true, 0.1, 1e-3);
               }, false, {}});
  v.push_back({"mse_loss", {s, s}, [](V x) { return F::mse_loss(x[0], x[1]); }, false, {}});
  return v;
}

class GradTest : public testing::Test {
 public:
  GradTest(Device dev, GradCase c) : dev_(dev), c_(std::move(c)) {}
  void TestBody() override {
    Generator gen(std::hash<std::string>{}(c_.name));
    std::vector<Tensor> data;
    for (const Shape& s : c_.shapes)
      data.push_back(c_.positive ? uniform(s, 0.2, 2, DType::f32, Device(), &gen)
                                 : uniform(s, -2, 2, DType::f32, Device(), &gen));
    std::vector<Tensor> xc, xd;
    for (const Tensor& d : data) {
      xc.push_back(d.clone().requires_grad_());
      xd.push_back(d.to(dev_).requires_grad_());
    }
    Tensor yc = c_.f(xc);
    Tensor w = uniform(yc.shape(), -1, 1, DType::f32, Device(), &gen);
    sum(mul(yc, w)).backward();
    Tensor yd;
    try {
      yd = c_.f(xd);
      ASSERT_EQ(yd.device(), dev_) << c_.name << " ran off the device";
      sum(mul(yd, w.to(dev_))).backward();
    } catch (const std::exception& e) {
      FAIL() << c_.name << " on " << dev_.str() << ": " << e.what();
    }
    EXPECT_LE(nmse(yc, yd), 1e-9) << c_.name << ": forward differs";
    for (size_t i = 0; i < xc.size(); ++i) {
      ASSERT_TRUE(xd[i].grad().defined()) << c_.name << ": input " << i << " got no gradient on " << dev_.str();
      EXPECT_LE(nmse(xc[i].grad(), xd[i].grad()), 1e-8) << c_.name << ": gradient of input " << i << " differs";
    }
  }

 private:
  Device dev_;
  GradCase c_;
};
}  // namespace

void register_grad_tests(const Device& dev) {
  for (GradCase& c : grad_cases()) {
    const std::string suite = dev.str() + ".grad";
    testing::RegisterTest(suite.c_str(), c.name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [dev, c]() -> testing::Test* { return new GradTest(dev, c); });
  }
}

}  // namespace kiln::backend_ops
