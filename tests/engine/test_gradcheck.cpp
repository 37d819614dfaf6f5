// A gradcheck (central differences in f64) for every differentiable op (the unary ones from
// tests/common/unary_op_cases.h), and a check that the cases cover every OpKind.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "engine/autograd/gradcheck.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "tests/common/unary_op_cases.h"

using namespace kiln;

namespace {

struct Case {
  std::string name;
  std::vector<Shape> shapes;  // f64 inputs requiring grad
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  double low = -2, high = 2;  // input range
  double eps = 1e-6;          // finite-difference step
};

Tensor idx(std::vector<int64_t> v, const Shape& s) { return Tensor::from_vector(v, s); }

Pool2dParams pool(int64_t k, int64_t s, int64_t p = 0, bool ceil = false) {
  Pool2dParams q;
  q.kernel[0] = q.kernel[1] = k;
  q.stride[0] = q.stride[1] = s;
  q.padding[0] = q.padding[1] = p;
  q.ceil_mode = ceil;
  return q;
}

std::vector<Case> cases() {
  using V = const std::vector<Tensor>&;
  Conv2dParams strided;
  strided.stride[0] = strided.stride[1] = 2;
  strided.padding[0] = strided.padding[1] = 1;
  Conv2dParams grouped;
  grouped.groups = 2;
  grouped.dilation[0] = grouped.dilation[1] = 2;
  ConvTranspose2dParams upsample;  // stride 2, padding 1, output_padding (1, 0), groups 2
  upsample.stride[0] = upsample.stride[1] = 2;
  upsample.padding[0] = upsample.padding[1] = 1;
  upsample.output_padding[0] = 1;
  upsample.groups = 2;
  ConvTranspose2dParams dilated;
  dilated.dilation[0] = 2;
  std::vector<Case> v = {
      {"reshape", {{2, 3}}, [](V x) { return x[0].reshape({3, 2}); }},
      {"permute", {{2, 3, 4}}, [](V x) { return x[0].permute({2, 0, 1}); }},
      {"expand", {{3, 1}}, [](V x) { return x[0].expand({2, 3, 4}); }},
      {"slice", {{5, 4}}, [](V x) { return x[0].slice(0, 1, 5, 2).slice(1, -3, 4); }},
      // f32 rounding (~1e-7) needs a larger step; the function is linear, so that is exact.
      {"cast", {{3}}, [](V x) { return x[0].to(DType::f32).to(DType::f64); }, -2, 2, 1e-2},
      {"contiguous", {{3, 4}}, [](V x) { return x[0].t().contiguous(); }},
      {"cat", {{2, 3}, {2, 1}}, [](V x) { return cat({x[0], x[1]}, 1); }},
      {"stack", {{2, 3}, {2, 3}}, [](V x) { return stack({x[0], x[1]}, 0); }},
      {"add", {{2, 3}, {3}}, [](V x) { return add(x[0], x[1]); }},
      {"sub", {{2, 1}, {1, 3}}, [](V x) { return sub(x[0], x[1]); }},
      {"mul", {{2, 3}, {2, 3}}, [](V x) { return mul(x[0], x[1].t().contiguous().t()); }},
      {"div", {{2, 3}, {3}}, [](V x) { return div(x[0], x[1]); }, 0.5, 2},
      {"pow", {{2, 3}, {2, 3}}, [](V x) { return pow(x[0], x[1]); }, 0.5, 2},
      {"maximum", {{2, 3}, {3}}, [](V x) { return maximum(x[0], x[1]); }},
      {"minimum", {{2, 3}, {2, 1}}, [](V x) { return minimum(x[0], x[1]); }},
      {"where", {{2, 3}, {3}},
       [](V x) { return where(gt(x[0], Tensor::scalar(0, DType::f64)), x[0], x[1]); }},
      {"sum", {{2, 3, 4}}, [](V x) { return sum(x[0], {0, 2}); }},
      {"sum_keepdim", {{2, 3, 4}}, [](V x) { return sum(x[0], {1}, true); }},
      {"mean", {{2, 3, 4}}, [](V x) { return mean(x[0], {-1}); }},
      {"prod", {{2, 3}}, [](V x) { return prod(x[0], {1}); }},
      {"prod_with_zero", {{2, 3}},
       [](V x) { return prod(mul(x[0], Tensor::from_vector(std::vector<double>{1, 0, 1, 1, 1, 1}, {2, 3})), {1}); }},
      {"amax", {{3, 4}}, [](V x) { return amax(x[0], {1}); }},
      {"amin", {{3, 4}}, [](V x) { return amin(x[0], {0}, true); }},
      {"var", {{3, 4}}, [](V x) { return var(x[0], {1}); }},
      {"var_population", {{3, 4}}, [](V x) { return var(x[0], {}, 0); }},
      {"logsumexp", {{3, 4}}, [](V x) { return logsumexp(x[0], {1}); }},
      {"matmul", {{2, 3}, {3, 4}}, [](V x) { return matmul(x[0], x[1]); }},
      {"matmul_batched_broadcast", {{2, 1, 2, 3}, {3, 3, 2}}, [](V x) { return matmul(x[0], x[1]); }},
      {"matmul_vector", {{3}, {3, 2}}, [](V x) { return matmul(x[0], x[1]); }},
      {"linear", {{4, 3}, {2, 3}, {2}}, [](V x) { return linear(x[0], x[1], x[2]); }},
      {"conv2d", {{2, 2, 5, 5}, {3, 2, 3, 3}, {3}}, [](V x) { return conv2d(x[0], x[1], x[2]); }},
      {"conv2d_strided", {{1, 2, 6, 5}, {2, 2, 3, 3}, {2}},
       [strided](V x) { return conv2d(x[0], x[1], x[2], strided); }},
      {"conv2d_grouped_dilated", {{1, 4, 7, 7}, {2, 2, 3, 3}},
       [grouped](V x) { return conv2d(x[0], x[1], Tensor(), grouped); }},
      {"conv_transpose2d", {{2, 3, 3, 4}, {3, 2, 3, 3}, {2}}, [](V x) { return conv_transpose2d(x[0], x[1], x[2]); }},
      {"conv_transpose2d_strided_grouped", {{1, 4, 3, 3}, {4, 3, 3, 3}, {6}},
       [upsample](V x) { return conv_transpose2d(x[0], x[1], x[2], upsample); }},
      {"conv_transpose2d_dilated", {{1, 2, 4, 3}, {2, 3, 2, 3}},
       [dilated](V x) { return conv_transpose2d(x[0], x[1], Tensor(), dilated); }},
      {"max_pool2d", {{1, 2, 5, 5}}, [](V x) { return max_pool2d(x[0], pool(2, 2, 1, true)); }},
      {"avg_pool2d", {{1, 2, 5, 5}}, [](V x) { return avg_pool2d(x[0], pool(3, 2, 1)); }},
      {"adaptive_avg_pool2d", {{1, 2, 5, 7}}, [](V x) { return adaptive_avg_pool2d(x[0], {3, 2}); }},
      {"softmax", {{3, 4}}, [](V x) { return softmax(x[0], 1); }},
      {"log_softmax", {{3, 4}}, [](V x) { return log_softmax(x[0], 0); }},
      {"gather", {{3, 4}}, [](V x) { return gather(x[0], 1, idx({0, 3, 1, 1, 2, 0}, {3, 2})); }},
      {"scatter_add", {{3, 4}, {2, 4}},
       [](V x) { return scatter_add(x[0], 0, idx({0, 1, 2, 0, 2, 2, 1, 0}, {2, 4}), x[1]); }},
      {"index_select", {{4, 3}}, [](V x) { return index_select(x[0], 0, idx({3, 0, 3}, {3})); }},
      {"index_add", {{4, 3}, {3, 3}}, [](V x) { return index_add(x[0], 0, idx({1, 1, 2}, {3}), x[1]); }},
      // Fake quantization is a staircase, whose finite differences are 0 or huge; its straight-through
      // gradient is the derivative of the staircase's limit as the step shrinks: clamping to the
      // range. With a step (1e-10) far below the difference step (1e-6), the staircase is that
      // limit to within 5e-5 per quotient: the elements inside [-1, 1] check gradient 1, those
      // outside (inputs span [-2, 2]) gradient 0.
      {"fake_quantize_per_tensor", {{3, 4}},
       [](V x) { return fake_quantize_per_tensor_affine(x[0], 1e-10f, 0, -10'000'000'000, 10'000'000'000); }},
      {"fake_quantize_per_channel", {{3, 4}},
       [](V x) {
         return fake_quantize_per_channel_affine(x[0], Tensor::from_vector(std::vector<float>{1e-10f, 2e-10f, 5e-11f}, {3}),
                                                 idx({0, 1000, -1000}, {3}), 0, -10'000'000'000, 10'000'000'000);
       }},
  };
  for (const op_cases::UnaryOpCase& c : op_cases::unary_op_cases()) {
    if (!op_cases::unary_op_differentiable(c.op)) continue;
    v.push_back({op_cases::case_name(c), {{6}}, [c](V x) { return op_cases::apply_unary(c, x[0]); }, c.low, c.high});
  }
  return v;
}

void collect_kinds(const Node* n, std::set<OpKind>& kinds, std::set<const Node*>& seen) {
  if (!n || !seen.insert(n).second) return;
  kinds.insert(n->kind);
  for (auto& in : n->inputs)
    if (in) collect_kinds(in->grad_fn.get(), kinds, seen);
}

class GradcheckOp : public testing::TestWithParam<size_t> {};

}  // namespace

TEST_P(GradcheckOp, MatchesFiniteDifferences) {
  Case c = cases()[GetParam()];
  Generator gen(GetParam() + 1);
  std::vector<Tensor> inputs;
  for (const Shape& s : c.shapes) inputs.push_back(uniform(s, c.low, c.high, DType::f64, {}, &gen).requires_grad_());
  autograd::GradcheckOptions options;
  options.eps = c.eps;
  auto r = autograd::gradcheck(c.fn, inputs, options);
  EXPECT_TRUE(r.ok) << c.name << ": " << r.message;
}

INSTANTIATE_TEST_SUITE_P(EveryOp, GradcheckOp, testing::Range<size_t>(0, cases().size()),
                         [](const testing::TestParamInfo<size_t>& i) { return cases()[i.param].name; });

TEST(Gradcheck, CoversEveryDifferentiableOp) {
  std::set<OpKind> kinds;
  std::set<const Node*> seen;
  std::vector<Tensor> keep;
  for (const Case& c : cases()) {
    std::vector<Tensor> inputs;
    for (const Shape& s : c.shapes) inputs.push_back(uniform(s, c.low, c.high, DType::f64).requires_grad_());
    Tensor y = c.fn(inputs);
    keep.push_back(y);
    collect_kinds(y.impl()->grad_fn.get(), kinds, seen);
  }
  for (int k = 0; k < static_cast<int>(OpKind::count); ++k) {
    // The fused batch norm exists only on GPU backends (the CPU decomposes it, and that
    // decomposition is checked here): backend-ops --mode=grad checks its rule against it.
    if (static_cast<OpKind>(k) == OpKind::batch_norm) continue;
    EXPECT_TRUE(kinds.count(static_cast<OpKind>(k))) << "no gradcheck case for " << op_kind_name(static_cast<OpKind>(k));
  }
}

TEST(Gradcheck, DetectsAWrongGradient) {
  // x * stop_gradient(x) has derivative x, not 2x: the check must fail on it.
  auto bad = [](const std::vector<Tensor>& x) { return mul(x[0], x[0].detach()); };
  Tensor x = uniform({4}, 1, 2, DType::f64).requires_grad_();
  auto wrong_rule = [&](const std::vector<Tensor>& in) {
    // numeric derivative sees 2x (detach is an identity for the values), analytic sees x
    return bad(in);
  };
  EXPECT_FALSE(autograd::gradcheck(wrong_rule, {x}).ok);
}
