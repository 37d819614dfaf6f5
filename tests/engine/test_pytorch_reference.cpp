// Kiln's ops against PyTorch: tests/fixtures/op_reference.json holds cases computed by
// PyTorch in float64 (tests/fixtures/make_op_fixtures.py documents the format and every
// op's attrs). For each case we build the inputs in f64, run the matching Kiln function,
// compare the output, then backpropagate grad_output and compare every input gradient.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/ops.h"
#include "engine/core/tensor.h"
#include "engine/nn/embedding.h"
#include "engine/nn/functional.h"

using namespace kiln;
using json = nlohmann::json;
namespace F = kiln::nn::functional;

namespace {

// ---- the fixture file, loaded once ----

struct Fixture {
  std::vector<json> cases;
  std::string error;  // why loading failed, empty on success
};

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture r;
    const std::string path = std::string(KILN_FIXTURES_DIR) + "/op_reference.json";
    std::ifstream in(path);
    if (!in) {
      r.error = "cannot open " + path;
      return r;
    }
    try {
      json doc = json::parse(in);
      for (auto& c : doc.at("cases")) r.cases.push_back(c);
    } catch (const std::exception& e) {
      r.error = path + ": " + e.what();
      r.cases.clear();
    }
    return r;
  }();
  return f;
}

// ---- JSON -> Tensor ----

Shape shape_of(const json& t) { return t.at("shape").get<std::vector<int64_t>>(); }

Tensor tensor_from_json(const json& t) {
  if (t.is_null()) return Tensor();
  const Shape shape = shape_of(t);
  const std::string dtype = t.at("dtype").get<std::string>();
  const json& data = t.at("data");
  if (dtype == "float64") return Tensor::from_vector(data.get<std::vector<double>>(), shape);
  if (dtype == "int64") return Tensor::from_vector(data.get<std::vector<int64_t>>(), shape);
  if (dtype == "bool") {
    auto flags = std::make_unique<bool[]>(data.size());
    for (size_t i = 0; i < data.size(); ++i) flags[i] = data[i].get<bool>();
    return Tensor::from_host(flags.get(), data.size(), DType::bool_, shape);
  }
  throw std::runtime_error("fixture tensor of unknown dtype " + dtype);
}

// ---- attrs ----

std::vector<int64_t> dims_attr(const json& a) {
  const json& d = a.at("dims");
  return d.is_null() ? std::vector<int64_t>{} : d.get<std::vector<int64_t>>();
}

F::Reduction reduction_attr(const json& a) {
  const std::string r = a.at("reduction").get<std::string>();
  if (r == "mean") return F::Reduction::mean;
  if (r == "sum") return F::Reduction::sum;
  if (r == "none") return F::Reduction::none;
  throw std::runtime_error("unknown reduction '" + r + "'");
}

void pair_attr(const json& a, const char* key, int64_t (&out)[2]) {
  out[0] = a.at(key).at(0).get<int64_t>();
  out[1] = a.at(key).at(1).get<int64_t>();
}

Conv2dParams conv_attrs(const json& a) {
  Conv2dParams p;
  pair_attr(a, "stride", p.stride);
  pair_attr(a, "padding", p.padding);
  pair_attr(a, "dilation", p.dilation);
  p.groups = a.at("groups").get<int64_t>();
  return p;
}

ConvTranspose2dParams conv_transpose_attrs(const json& a) {
  ConvTranspose2dParams p;
  static_cast<Conv2dParams&>(p) = conv_attrs(a);
  pair_attr(a, "output_padding", p.output_padding);
  return p;
}

Pool2dParams pool_attrs(const json& a) {
  Pool2dParams p;
  pair_attr(a, "kernel_size", p.kernel);
  pair_attr(a, "stride", p.stride);
  pair_attr(a, "padding", p.padding);
  if (a.contains("dilation")) pair_attr(a, "dilation", p.dilation);
  p.ceil_mode = a.at("ceil_mode").get<bool>();
  if (a.contains("count_include_pad")) p.count_include_pad = a.at("count_include_pad").get<bool>();
  return p;
}

double bound_attr(const json& a, const char* key, double if_null) {
  return a.at(key).is_null() ? if_null : a.at(key).get<double>();
}

// ---- the dispatch table: fixture op name -> Kiln call ----

using Inputs = std::vector<Tensor>;
using OpFn = std::function<Tensor(Inputs& in, const json& a)>;

// The i-th input, or an undefined tensor when it is absent (null or left off the end).
Tensor opt(const Inputs& in, size_t i) { return i < in.size() ? in[i] : Tensor(); }

const std::map<std::string, OpFn>& dispatch_table() {
  static const std::map<std::string, OpFn> table = {
      // elementwise, broadcasting
      {"add", [](Inputs& in, const json&) { return add(in[0], in[1]); }},
      {"sub", [](Inputs& in, const json&) { return sub(in[0], in[1]); }},
      {"mul", [](Inputs& in, const json&) { return mul(in[0], in[1]); }},
      {"div", [](Inputs& in, const json&) { return div(in[0], in[1]); }},
      {"pow", [](Inputs& in, const json&) { return pow(in[0], in[1]); }},
      {"maximum", [](Inputs& in, const json&) { return maximum(in[0], in[1]); }},
      {"minimum", [](Inputs& in, const json&) { return minimum(in[0], in[1]); }},
      {"where", [](Inputs& in, const json&) { return where(in[0], in[1], in[2]); }},
      // unary
      {"neg", [](Inputs& in, const json&) { return neg(in[0]); }},
      {"abs", [](Inputs& in, const json&) { return abs(in[0]); }},
      {"exp", [](Inputs& in, const json&) { return exp(in[0]); }},
      {"log", [](Inputs& in, const json&) { return log(in[0]); }},
      {"log1p", [](Inputs& in, const json&) { return log1p(in[0]); }},
      {"expm1", [](Inputs& in, const json&) { return expm1(in[0]); }},
      {"sqrt", [](Inputs& in, const json&) { return sqrt(in[0]); }},
      {"rsqrt", [](Inputs& in, const json&) { return rsqrt(in[0]); }},
      {"reciprocal", [](Inputs& in, const json&) { return reciprocal(in[0]); }},
      {"sin", [](Inputs& in, const json&) { return sin(in[0]); }},
      {"cos", [](Inputs& in, const json&) { return cos(in[0]); }},
      {"tanh", [](Inputs& in, const json&) { return tanh(in[0]); }},
      {"sigmoid", [](Inputs& in, const json&) { return sigmoid(in[0]); }},
      {"relu", [](Inputs& in, const json&) { return relu(in[0]); }},
      {"silu", [](Inputs& in, const json&) { return silu(in[0]); }},
      {"erf", [](Inputs& in, const json&) { return erf(in[0]); }},
      {"gelu",
       [](Inputs& in, const json& a) {
         return gelu(in[0], a.at("approximate").get<std::string>());
       }},
      {"leaky_relu", [](Inputs& in, const json& a) { return leaky_relu(in[0], a.at("negative_slope").get<double>()); }},
      {"clamp",
       [](Inputs& in, const json& a) {
         return clamp(in[0], bound_attr(a, "min", -INFINITY), bound_attr(a, "max", INFINITY));
       }},
      // reductions
      {"sum", [](Inputs& in, const json& a) { return sum(in[0], dims_attr(a), a.at("keepdim").get<bool>()); }},
      {"mean", [](Inputs& in, const json& a) { return mean(in[0], dims_attr(a), a.at("keepdim").get<bool>()); }},
      {"amax", [](Inputs& in, const json& a) { return amax(in[0], dims_attr(a), a.at("keepdim").get<bool>()); }},
      {"amin", [](Inputs& in, const json& a) { return amin(in[0], dims_attr(a), a.at("keepdim").get<bool>()); }},
      {"prod", [](Inputs& in, const json& a) { return prod(in[0], dims_attr(a), a.at("keepdim").get<bool>()); }},
      {"var",
       [](Inputs& in, const json& a) {
         return var(in[0], dims_attr(a), a.at("correction").get<int64_t>(), a.at("keepdim").get<bool>());
       }},
      {"logsumexp",
       [](Inputs& in, const json& a) { return logsumexp(in[0], dims_attr(a), a.at("keepdim").get<bool>()); }},
      {"argmax",
       [](Inputs& in, const json& a) {
         if (a.at("dim").is_null()) return argmax(in[0].reshape({-1}), 0);  // torch.argmax(x): flattened
         return argmax(in[0], a.at("dim").get<int64_t>(), a.at("keepdim").get<bool>());
       }},
      // linear algebra, nn functions
      {"matmul", [](Inputs& in, const json&) { return matmul(in[0], in[1]); }},
      {"linear", [](Inputs& in, const json&) { return linear(in[0], in[1], opt(in, 2)); }},
      {"conv2d", [](Inputs& in, const json& a) { return conv2d(in[0], in[1], opt(in, 2), conv_attrs(a)); }},
      {"conv_transpose2d",
       [](Inputs& in, const json& a) { return conv_transpose2d(in[0], in[1], opt(in, 2), conv_transpose_attrs(a)); }},
      {"max_pool2d", [](Inputs& in, const json& a) { return max_pool2d(in[0], pool_attrs(a)); }},
      {"avg_pool2d", [](Inputs& in, const json& a) { return avg_pool2d(in[0], pool_attrs(a)); }},
      {"adaptive_avg_pool2d",
       [](Inputs& in, const json& a) {
         return adaptive_avg_pool2d(in[0], a.at("output_size").get<std::array<int64_t, 2>>());
       }},
      {"softmax", [](Inputs& in, const json& a) { return softmax(in[0], a.at("dim").get<int64_t>()); }},
      {"log_softmax", [](Inputs& in, const json& a) { return log_softmax(in[0], a.at("dim").get<int64_t>()); }},
      {"gather", [](Inputs& in, const json& a) { return gather(in[0], a.at("dim").get<int64_t>(), in[1]); }},
      {"index_select",
       [](Inputs& in, const json& a) { return index_select(in[0], a.at("dim").get<int64_t>(), in[1]); }},
      {"cat", [](Inputs& in, const json& a) { return cat(in, a.at("dim").get<int64_t>()); }},
      {"embedding",
       [](Inputs& in, const json&) {  // inputs [weight, indices]: the nn.Embedding layer with that weight
         nn::Embedding layer(in[0].size(0), in[0].size(1));
         layer.weight = in[0];
         return layer.forward(in[1]);
       }},
      // normalization
      {"layer_norm",
       [](Inputs& in, const json& a) {
         return F::layer_norm(in[0], a.at("normalized_shape").get<std::vector<int64_t>>(), opt(in, 1), opt(in, 2),
                              a.at("eps").get<double>());
       }},
      {"batch_norm",  // training mode, no running stats
       [](Inputs& in, const json& a) {
         return F::batch_norm(in[0], Tensor(), Tensor(), opt(in, 1), opt(in, 2), /*training=*/true,
                              /*momentum=*/0.1, a.at("eps").get<double>());
       }},
      // losses
      {"cross_entropy",
       [](Inputs& in, const json& a) {
         return F::cross_entropy(in[0], in[1], opt(in, 2), a.at("ignore_index").get<int64_t>(), reduction_attr(a),
                                 a.at("label_smoothing").get<double>());
       }},
      {"nll_loss",
       [](Inputs& in, const json& a) {
         return F::nll_loss(in[0], in[1], opt(in, 2), a.at("ignore_index").get<int64_t>(), reduction_attr(a));
       }},
      {"mse_loss", [](Inputs& in, const json& a) { return F::mse_loss(in[0], in[1], reduction_attr(a)); }},
      {"l1_loss", [](Inputs& in, const json& a) { return F::l1_loss(in[0], in[1], reduction_attr(a)); }},
      {"binary_cross_entropy_with_logits",
       [](Inputs& in, const json& a) {
         return F::binary_cross_entropy_with_logits(in[0], in[1], opt(in, 2), reduction_attr(a), opt(in, 3));
       }},
      // fake quantization (quantization-aware training): scale and zero_point are attrs
      {"fake_quantize_per_tensor_affine",
       [](Inputs& in, const json& a) {
         return fake_quantize_per_tensor_affine(in[0], a.at("scale").get<float>(), a.at("zero_point").get<int64_t>(),
                                                a.at("quant_min").get<int64_t>(), a.at("quant_max").get<int64_t>());
       }},
      {"fake_quantize_per_channel_affine",
       [](Inputs& in, const json& a) {
         const auto scale = a.at("scale").get<std::vector<float>>();
         const auto zero_point = a.at("zero_point").get<std::vector<int64_t>>();
         return fake_quantize_per_channel_affine(
             in[0], Tensor::from_vector(scale, {static_cast<int64_t>(scale.size())}),
             Tensor::from_vector(zero_point, {static_cast<int64_t>(zero_point.size())}), a.at("axis").get<int64_t>(),
             a.at("quant_min").get<int64_t>(), a.at("quant_max").get<int64_t>());
       }},
  };
  return table;
}

// ---- comparison ----

// One tolerance for every op, conv and pooling included: Kiln computes f64 in f64
// throughout, and the largest difference from PyTorch seen over all cases is ~2e-15.
struct Tolerance {
  double atol = 1e-9, rtol = 1e-7;
};

// got against the fixture tensor `want`: same shape, same dtype category, values within
// atol + rtol * |want| (exact for integer / bool), NaN where and only where want has NaN.
::testing::AssertionResult matches(const Tensor& got, const json& want, Tolerance tol) {
  if (!got.defined()) return ::testing::AssertionFailure() << "Kiln's tensor is undefined";
  const Shape want_shape = shape_of(want);
  if (got.shape() != want_shape)
    return ::testing::AssertionFailure() << "shape " << ::testing::PrintToString(got.shape()) << ", PyTorch's is "
                                         << ::testing::PrintToString(want_shape);
  const std::string dtype = want.at("dtype").get<std::string>();
  const json& data = want.at("data");
  if (dtype == "int64" || dtype == "bool") {
    const DType expect = dtype == "int64" ? DType::i64 : DType::bool_;
    if (got.dtype() != expect)
      return ::testing::AssertionFailure() << "dtype " << dtype_name(got.dtype()) << ", PyTorch's is " << dtype;
    std::vector<int64_t> g = got.to(DType::i64).contiguous().to_vector<int64_t>();
    for (size_t i = 0; i < g.size(); ++i) {
      const int64_t w = dtype == "int64" ? data.at(i).get<int64_t>() : static_cast<int64_t>(data.at(i).get<bool>());
      if (g[i] != w) return ::testing::AssertionFailure() << "element " << i << ": " << g[i] << ", PyTorch: " << w;
    }
    return ::testing::AssertionSuccess();
  }
  if (got.dtype() != DType::f64)
    return ::testing::AssertionFailure() << "dtype " << dtype_name(got.dtype()) << ", PyTorch's is float64";
  const std::vector<double> g = got.contiguous().to_vector<double>();
  int bad = 0;
  double worst = 0;
  std::ostringstream msg;
  msg.precision(17);
  for (size_t i = 0; i < g.size(); ++i) {
    const double w = data.at(i).get<double>();
    bool ok;
    if (std::isnan(w) || std::isnan(g[i])) {
      ok = std::isnan(w) && std::isnan(g[i]);
    } else {
      const double err = std::abs(g[i] - w);
      ok = err <= tol.atol + tol.rtol * std::abs(w);
      if (!ok) worst = std::max(worst, err);
    }
    if (!ok && ++bad <= 6) msg << "\n  element " << i << ": " << g[i] << ", PyTorch: " << w;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << g.size() << " elements differ (worst abs error " << worst
                                       << ", atol " << tol.atol << " + rtol " << tol.rtol << ")" << msg.str();
}

bool all_zero(const json& t) {
  return std::all_of(t.at("data").begin(), t.at("data").end(), [](const json& v) { return v.get<double>() == 0.0; });
}

// ---- the parameterized test: one per case ----

class PyTorchReferenceOp : public ::testing::TestWithParam<size_t> {};

TEST_P(PyTorchReferenceOp, OutputAndGradients) {
  const json& c = fixture().cases.at(GetParam());
  const std::string op = c.at("op").get<std::string>();
  const auto& table = dispatch_table();
  auto fn = table.find(op);
  ASSERT_NE(fn, table.end()) << "op '" << op << "' has no Kiln mapping in the dispatch table";

  Inputs inputs;
  for (const json& t : c.at("inputs")) {
    Tensor x = tensor_from_json(t);
    if (x.defined() && is_floating(x.dtype())) x.requires_grad_(true);
    inputs.push_back(x);
  }
  const Inputs leaves = inputs;  // the handles whose .grad we read (the dispatcher gets a copy)
  const json& attrs = c.at("attrs");

  Tensor out;
  try {
    out = fn->second(inputs, attrs);
  } catch (const std::exception& e) {
    FAIL() << op << " " << attrs.dump() << " threw: " << e.what();
  }
  const Tolerance tol;
  ASSERT_TRUE(matches(out, c.at("output"), tol)) << "output of " << op << " " << attrs.dump();

  const json& grad_output = c.at("grad_output");
  if (grad_output.is_null()) return;  // integer output: nothing to differentiate
  ASSERT_TRUE(out.requires_grad()) << op << ": the output does not require grad";
  try {
    out.backward(tensor_from_json(grad_output));
  } catch (const std::exception& e) {
    FAIL() << op << " backward threw: " << e.what();
  }
  const json& grads = c.at("grads");
  ASSERT_EQ(grads.size(), leaves.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].is_null()) continue;  // PyTorch does not differentiate this input
    Tensor g = leaves[i].grad();
    if (!g.defined()) {  // Kiln leaves an unused leaf without .grad; PyTorch's fixture has zeros
      EXPECT_TRUE(all_zero(grads[i])) << "grad of input " << i << " is undefined but PyTorch's is nonzero";
      continue;
    }
    EXPECT_TRUE(matches(g, grads[i], tol)) << "grad of input " << i << " of " << op << " " << attrs.dump();
  }
}

std::vector<size_t> case_indices() {
  std::vector<size_t> idx(fixture().cases.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  return idx;
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  return fixture().cases.at(info.param).at("name").get<std::string>();
}

INSTANTIATE_TEST_SUITE_P(PyTorchReference, PyTorchReferenceOp, ::testing::ValuesIn(case_indices()), case_name);

// ---- the fixture file itself ----

TEST(PyTorchReferenceFixture, HasEnoughCasesAndEveryOpIsDispatched) {
  const Fixture& f = fixture();
  ASSERT_TRUE(f.error.empty()) << f.error;
  EXPECT_GE(f.cases.size(), 100u);
  const auto& table = dispatch_table();
  std::set<std::string> names, ops;
  for (const json& c : f.cases) {
    const std::string name = c.at("name").get<std::string>(), op = c.at("op").get<std::string>();
    EXPECT_TRUE(names.insert(name).second) << "duplicate case name " << name;
    ops.insert(op);
    EXPECT_TRUE(table.count(op)) << "case " << name << ": op '" << op << "' is not dispatched to Kiln";
    EXPECT_EQ(c.at("grads").size(), c.at("inputs").size()) << "case " << name;
  }
  for (const auto& [op, fn] : table) EXPECT_TRUE(ops.count(op)) << "dispatch entry '" << op << "' has no case";
}

}  // namespace
