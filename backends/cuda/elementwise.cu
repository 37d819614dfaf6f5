// CudaBackend::copy (with dtype conversion), fill, where, relu_backward, bernoulli and adam_step.
#include <cmath>
#include <optional>

#include "backends/cuda/common.cuh"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/profile.h"
#include "engine/core/splitmix.h"

namespace kiln::cuda {
namespace {

void check_shape(const char* op, const char* what, const TensorArg& t, const Shape& shape) {
  KILN_CHECK(t.shape == shape && t.strides.size() == shape.size(), ShapeError, op, ": ", what, " has shape ",
             shape_str(t.shape), ", expected ", shape_str(shape));
}

// coef (when not null) replaces neg_step, bc2_sqrt and decay: the step of a recorded graph.
template <class T>
__global__ void adam_kernel(int64_t n, T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m,
                            T* __restrict__ v, T decay, T wd, T w1, T b2, T c2, T neg_step, T bc2_sqrt, T eps,
                            bool decoupled, const double* __restrict__ coef) {
  if (coef) neg_step = T(coef[0]), bc2_sqrt = T(coef[1]), decay = T(coef[2]);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    T pi = p[i], gi = g[i], mi = m[i];
    if (decoupled) pi = pi * decay;
    else gi = gi + wd * pi;
    mi = w1 < T(0.5) ? mi + w1 * (gi - mi) : gi - (gi - mi) * (T(1) - w1);
    const T vi = v[i] * b2 + c2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi + neg_step * mi / (sqrt(vi) / bc2_sqrt + eps);
  }
}

// coef = {-(lr / bc1), sqrt(bc2), 1 - lr * weight_decay} with lr = state->lr at step
// t = max(1, step0 + state->step_offset): a graph's ReplayState, written before each launch (graph.cu).
__global__ void adam_coef_kernel(double* coef, const CudaBackend::ReplayState* state, int64_t step0, double beta1,
                                 double beta2, double weight_decay) {
  const int64_t step = step0 + state->step_offset;
  const double t = static_cast<double>(step < 1 ? 1 : step), lr = state->lr;
  coef[0] = -(lr / (1 - pow(beta1, t)));
  coef[1] = sqrt(1 - pow(beta2, t));
  coef[2] = 1 - lr * weight_decay;
}

}  // namespace

void CudaBackend::copy(const TensorArg& out, const TensorArg& in) {
  ProfileScope prof_(stream_, "copy", in);
  check_shape("copy", "input", in, out.shape);
  if (out.numel() == 0) return;
  make_current();
  KILN_CUDA_DISPATCH_ALL(out.dtype, "copy", {
    using O = T;
    O* o = ptr<O>(out);
    KILN_CUDA_DISPATCH_ALL(in.dtype, "copy", {
      const T* a = ptr<const T>(in);
      if (launch_vectorized("copy", stream_, out, o, [=] __device__(T x) { return convert<O>(x); }, {&in}, a)) return;
      launch_elementwise<2>("copy", stream_, out.shape, {&out.strides, &in.strides},
                            [=] __device__(const int64_t(&off)[2]) { o[off[0]] = convert<O>(a[off[1]]); });
    });
  });
}

void CudaBackend::fill(const TensorArg& out, double value) {
  ProfileScope prof_(stream_, "fill", out);
  if (out.numel() == 0) return;
  make_current();
  KILN_CUDA_DISPATCH_ALL(out.dtype, "fill", {
    T* o = ptr<T>(out);
    const T v = convert<T>(value);
    launch_elementwise<1>("fill", stream_, out.shape, {&out.strides},
                          [=] __device__(const int64_t(&off)[1]) { o[off[0]] = v; });
  });
}

void CudaBackend::where(const TensorArg& out, const TensorArg& cond, const TensorArg& a, const TensorArg& b) {
  ProfileScope prof_(stream_, "where", out);
  check_shape("where", "condition", cond, out.shape);
  check_shape("where", "first input", a, out.shape);
  check_shape("where", "second input", b, out.shape);
  KILN_CHECK(cond.dtype == DType::bool_, DTypeError, "where: condition must be bool, got ", dtype_name(cond.dtype));
  KILN_CHECK(a.dtype == out.dtype && b.dtype == out.dtype, DTypeError, "where: inputs ", dtype_name(a.dtype), " and ",
             dtype_name(b.dtype), " must have the output's dtype ", dtype_name(out.dtype));
  if (out.numel() == 0) return;
  make_current();
  const bool* c = ptr<const bool>(cond);
  KILN_CUDA_DISPATCH_ALL(out.dtype, "where", {
    T* o = ptr<T>(out);
    const T* x = ptr<const T>(a);
    const T* y = ptr<const T>(b);
    launch_elementwise<4>("where", stream_, out.shape, {&out.strides, &cond.strides, &a.strides, &b.strides},
                          [=] __device__(const int64_t(&off)[4]) { o[off[0]] = c[off[1]] ? x[off[2]] : y[off[3]]; });
  });
}

// ReLU's backward in one pass (backend.h): grad_in = grad_out where out > 0, else 0; the
// comparison in float, so NaN and -0 give 0 as the composed rule mul(g, gt(y, 0)) does.
void CudaBackend::relu_backward(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& out) {
  ProfileScope prof_(stream_, "relu_backward", grad_in);
  check_shape("relu_backward", "grad_out", grad_out, grad_in.shape);
  check_shape("relu_backward", "out", out, grad_in.shape);
  KILN_CHECK(grad_out.dtype == grad_in.dtype && out.dtype == grad_in.dtype, DTypeError, "relu_backward: dtypes ",
             dtype_name(grad_in.dtype), ", ", dtype_name(grad_out.dtype), " and ", dtype_name(out.dtype), " differ");
  if (grad_in.numel() == 0) return;
  make_current();
  KILN_CUDA_DISPATCH_FLOAT(grad_in.dtype, "relu_backward", {
    T* o = ptr<T>(grad_in);
    const T* g = ptr<const T>(grad_out);
    const T* y = ptr<const T>(out);
    if (launch_vectorized(
            "relu_backward", stream_, grad_in, o,
            [=] __device__(T gv, T yv) { return convert<float>(yv) > 0.0f ? gv : convert<T>(0.0); }, {&grad_out, &out}, g, y))
      return;
    launch_elementwise<3>("relu_backward", stream_, grad_in.shape, {&grad_in.strides, &grad_out.strides, &out.strides},
                          [=] __device__(const int64_t(&off)[3]) {
                            o[off[0]] = convert<float>(y[off[2]]) > 0.0f ? g[off[1]] : convert<T>(0.0);
                          });
  });
}

// The counter-based draw of engine/core/splitmix.h (backend.h): the CPU's elements, made on the
// device instead of drawn on the host and uploaded (dropout's masks). In a recorded graph the
// key comes from the graph's ReplayState at each launch (backend.h), so replays draw anew.
void CudaBackend::bernoulli(const TensorArg& out, uint64_t key, uint64_t threshold, double value) {
  ProfileScope prof_(stream_, "bernoulli", out);
  KILN_CHECK(out.is_contiguous(), ValueError, "bernoulli: the output must be contiguous");
  if (out.numel() == 0) return;
  make_current();
  const ReplayState* state = replay_state();
  const uint64_t draw = state ? recorded_draws_++ : 0;
  KILN_CUDA_DISPATCH_FLOAT(out.dtype, "bernoulli", {
    T* o = ptr<T>(out);
    const T v = convert<T>(value), zero = convert<T>(0.0);
    launch_elementwise<1>("bernoulli", stream_, out.shape, {&out.strides}, [=] __device__(const int64_t(&off)[1]) {
      const uint64_t k = state ? mix64(state->rng_key + draw) : key;
      o[off[0]] = bernoulli_keeps(k, static_cast<uint64_t>(off[0]), threshold) ? v : zero;
    });
  });
}

void CudaBackend::adam_step(const TensorArg& param, const TensorArg& grad, const TensorArg& exp_avg,
                            const TensorArg& exp_avg_sq, const AdamParams& ap) {
  ProfileScope prof_(stream_, "adam_step", param);
  for (const TensorArg* t : {&grad, &exp_avg, &exp_avg_sq}) {
    check_shape("adam_step", "state", *t, param.shape);
    KILN_CHECK(t->dtype == param.dtype, DTypeError, "adam_step: param is ", dtype_name(param.dtype), ", state is ",
               dtype_name(t->dtype));
  }
  for (const TensorArg* t : {&param, &grad, &exp_avg, &exp_avg_sq})
    KILN_CHECK(t->is_contiguous(), ValueError, "adam_step: tensors must be contiguous (shape ",
               shape_str(param.shape), ")");
  KILN_CHECK(ap.step >= 1, ValueError, "adam_step: step must be >= 1, got ", ap.step);
  const int64_t n = param.numel();
  if (n == 0) return;
  make_current();
  const double bc1 = 1 - std::pow(ap.beta1, static_cast<double>(ap.step));
  const double bc2 = 1 - std::pow(ap.beta2, static_cast<double>(ap.step));
  // Recording a graph: lr and step come from the graph's ReplayState on each launch (graph.cu).
  std::optional<Scratch> coef;
  if (replay_state_) {
    coef.emplace(*this, 3 * sizeof(double));
    adam_coef_kernel<<<1, 1, 0, stream_>>>(static_cast<double*>(coef->get()), replay_state_, ap.step, ap.beta1,
                                           ap.beta2, ap.weight_decay);
  }
  const double* cp = coef ? static_cast<const double*>(coef->get()) : nullptr;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    adam_kernel<T><<<grid_for(n), kThreads, 0, stream_>>>(
        n, ptr<T>(param), ptr<const T>(grad), ptr<T>(exp_avg), ptr<T>(exp_avg_sq), T(1 - ap.lr * ap.weight_decay),
        T(ap.weight_decay), T(1 - ap.beta1), T(ap.beta2), T(1 - ap.beta2), T(-(ap.lr / bc1)), T(std::sqrt(bc2)),
        T(ap.eps), ap.decoupled, cp);
    check_launch("adam_step", param.shape);
  };
  if (param.dtype == DType::f32) run(float{});
  else if (param.dtype == DType::f64) run(double{});
  else throw DTypeError(detail::str_cat("adam_step: ", dtype_name(param.dtype), " is not supported on ", name()));
}

}  // namespace kiln::cuda
