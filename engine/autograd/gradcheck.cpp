#include "engine/autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"

namespace kiln::autograd {

namespace {
double weighted_sum(const Tensor& y, const Tensor& w) { return sum(mul(y.to(DType::f64), w)).item<double>(); }
}  // namespace

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, const GradcheckOptions& opt) {
  for (const Tensor& x : inputs)
    KILN_CHECK(!x.requires_grad() || (x.dtype() == DType::f64 && x.device().type == DeviceType::cpu), ValueError,
               "gradcheck: inputs that require grad must be f64 CPU tensors, got ", x.str());
  GradcheckResult result;
  Generator gen(opt.seed);
  Shape out_shape;
  {
    NoGradGuard no_grad;
    out_shape = fn(inputs).shape();
  }
  for (int p = 0; p < opt.projections; ++p) {
    Tensor w = normal(out_shape, 0, 1, DType::f64, Device(), &gen);
    // analytic
    std::vector<Tensor> leaves;
    for (const Tensor& x : inputs) {
      Tensor leaf = x.detach().clone();
      if (x.requires_grad()) leaf.requires_grad_(true);
      leaves.push_back(leaf);
    }
    Tensor y = fn(leaves);
    KILN_CHECK(y.requires_grad(), ValueError, "gradcheck: the output does not depend on any input that requires grad");
    sum(mul(y.to(DType::f64), w)).backward();
    // numeric
    NoGradGuard no_grad;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].requires_grad()) continue;
      Tensor analytic = leaves[i].grad().defined() ? leaves[i].grad().contiguous()
                                                   : Tensor::zeros(inputs[i].shape(), DType::f64);
      std::vector<double> a = analytic.to_vector<double>();
      std::vector<Tensor> probe;
      for (const Tensor& x : inputs) probe.push_back(x.detach().contiguous().clone());
      double* data = probe[i].data_ptr<double>();
      for (int64_t k = 0; k < probe[i].numel(); ++k) {
        double orig = data[k];
        data[k] = orig + opt.eps;
        double fp = weighted_sum(fn(probe), w);
        data[k] = orig - opt.eps;
        double fm = weighted_sum(fn(probe), w);
        data[k] = orig;
        double numeric = (fp - fm) / (2 * opt.eps);
        double err = std::abs(a[k] - numeric);
        result.max_abs_error = std::max(result.max_abs_error, err);
        if (result.ok && !(err <= opt.atol + opt.rtol * std::abs(numeric))) {
          result.ok = false;
          std::ostringstream os;
          os << "gradcheck: input " << i << " element " << k << ": analytic " << a[k] << " vs numeric " << numeric;
          result.message = os.str();
        }
      }
    }
  }
  return result;
}

}  // namespace kiln::autograd
