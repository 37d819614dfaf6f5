// CpuBackend::conv2d_*: 2-d convolution forward and backward through oneDNN.
//
// Each (op, dtype, shapes, params) gets a cached plan (Note [Plan cache]): the
// primitive, built on the layouts oneDNN prefers (format_tag::any), and the
// reorders between those and our plain NCHW / OIHW tensors. f16 (and bf16
// where oneDNN has no kernel) go through f32; f64 (gradcheck) runs direct loops.
// conv2d_fused_forward (inference, f32) is the forward plan with oneDNN post-ops (Note [Conv
// epilogue]).
#include <bit>
#include <cstring>
#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_packed.h"
#include "backends/cpu/dnnl_context.h"
#include "engine/core/read_only.h"
#include "engine/core/error.h"

namespace kiln::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;

enum class ConvOp { forward, backward_input, backward_weight };
const char* conv_op_name(ConvOp op) {
  static const char* names[] = {"conv2d_forward", "conv2d_backward_input", "conv2d_backward_weight"};
  return names[static_cast<int>(op)];
}

// The tensors of a conv2d: x = input [N, C, H, W], w = weight [O, C/G, kH, kW],
// y = output [N, O, Ho, Wo], b = bias [O] (data may be null); gradients in the
// same slots for the backward ops.
enum Slot { kX, kW, kY, kB, kSlots };

struct ConvGeom {
  int64_t N, C, H, W, O, kH, kW, Ho, Wo, G;
  Conv2dParams p;
  // Multiply-adds of one pass (forward, or either backward).
  int64_t macs() const { return N * O * Ho * Wo * (C / G) * kH * kW; }
};

ConvGeom geometry(ConvOp op, const TensorArg& x, const TensorArg& w, const TensorArg& y, const Conv2dParams& p) {
  auto shapes = [&] {
    return detail::str_cat(conv_op_name(op), ": input ", shape_str(x.shape), ", weight ", shape_str(w.shape),
                           ", output ", shape_str(y.shape));
  };
  KILN_CHECK(x.shape.size() == 4 && w.shape.size() == 4 && y.shape.size() == 4, ShapeError, shapes(),
             " must be 4-d");
  KILN_CHECK(x.dtype == w.dtype && x.dtype == y.dtype, DTypeError, shapes(), ": dtypes differ");
  ConvGeom g{x.shape[0], x.shape[1], x.shape[2], x.shape[3], w.shape[0], w.shape[2], w.shape[3],
             y.shape[2], y.shape[3], p.groups, p};
  KILN_CHECK(g.G >= 1 && g.C > 0 && g.C % g.G == 0 && g.O % g.G == 0 && w.shape[1] * g.G == g.C, ShapeError, shapes(),
             " do not fit groups=", g.G);
  KILN_CHECK(y.shape[0] == g.N && y.shape[1] == g.O, ShapeError, shapes(), ": batch or channels differ");
  for (int i = 0; i < 2; ++i) {
    const int64_t in = i ? g.W : g.H, k = i ? g.kW : g.kH, out = i ? g.Wo : g.Ho;
    const int64_t span = in + 2 * p.padding[i] - p.dilation[i] * (k - 1) - 1;
    KILN_CHECK(p.stride[i] >= 1 && p.dilation[i] >= 1 && p.padding[i] >= 0 && span >= 0 &&
                   out == span / p.stride[i] + 1,
               ShapeError, shapes(), ": output size does not match stride, padding and dilation");
  }
  return g;
}

// ---- oneDNN plans ----

struct Port {
  Slot slot;
  int arg;  // DNNL_ARG_*
  bool output;
  memory::desc user, inner;
  bool reordered = false;
  dnnl::reorder reorder;  // user -> inner for inputs, inner -> user for outputs
  dnnl::reorder preload;  // a reordered output that a sum post-op adds to: user -> inner
};

struct ConvPlan {
  bool via_f32 = false;
  dnnl::primitive prim;
  std::vector<Port> ports;
};

// Note [Conv layouts]: oneDNN's direct kernels on its blocked layouts (nChw16c),
// with reorders from and to our NCHW tensors, beat its plain-layout (im2col +
// GEMM) kernels on the Fashion-MNIST CNN's shapes, reorders included: 1.5-2x on
// [128,32,14,14] -> 64 in all three ops, 3-7x in backward_weight of
// [128,1,28,28] -> 32, a tie in its forward (measured with ONEDNN_VERBOSE and
// tests/bench/bench_sgemm.cpp). The exception is backward_input into few
// channels (C = 1): blocking pads C to 16, and the plain kernel is 5x faster.
bool blocked_layouts(ConvOp op, const ConvGeom& g) {
  return !(op == ConvOp::backward_input && g.C < 8);
}

void add_port(ConvPlan& plan, Slot slot, int arg, bool output, const memory::desc& user, const memory::desc& inner) {
  Port port;
  port.slot = slot;
  port.arg = arg;
  port.output = output;
  port.user = user;
  port.inner = inner;
  if (user != inner) {
    dnnl::engine& eng = dnnl_engine();
    port.reordered = true;
    port.reorder = output ? dnnl::reorder(dnnl::reorder::primitive_desc(eng, inner, eng, user))
                          : dnnl::reorder(dnnl::reorder::primitive_desc(eng, user, eng, inner));
  }
  plan.ports.push_back(std::move(port));
}

// Note [Conv epilogue]: conv2d_fused_forward is the forward convolution with oneDNN post-ops
// (dev_guide_attributes_post_ops): a sum post-op adds what the destination holds before the
// convolution (so the residual is first copied, or reordered, into it), then an eltwise post-op
// applies relu (eltwise_relu, alpha 0), clip (eltwise_clip, alpha lo, beta hi), hardswish or silu
// (eltwise_swish, alpha 1), all in the kernel's registers before the one write of the output: no
// separate pass over the tensor for the Add and the activation. The plan key holds the epilogue.
// The plan is forward_inference (conv2d's are forward_training, for autograd): oneDNN 2.6 then
// picks its brgconv kernels on NHWC, 33 ms against 46 ms for the direct kernels on nChw16c over
// resnet18's convolutions (ONEDNN_VERBOSE, 2 threads, reorders not counted; with them 50 against
// 62 ms).
dnnl::primitive_attr epilogue_attr(const ConvEpilogue* e) {
  dnnl::primitive_attr attr;
  if (!e) return attr;
  dnnl::post_ops po;
  if (e->residual) po.append_sum(1.0f);
  if (e->activation == ConvActivation::relu) po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  if (e->activation == ConvActivation::clip) po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, e->lo, e->hi);
  // oneDNN 2.6's hardswish takes no parameters (3.x: alpha 1/6, beta 1/2); swish is x * sigmoid(alpha x).
  if (e->activation == ConvActivation::hardswish) po.append_eltwise(1.0f, dnnl::algorithm::eltwise_hardswish, 0.0f, 0.0f);
  if (e->activation == ConvActivation::silu) po.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
  attr.set_post_ops(po);
  return attr;
}

// epi: null for the plain ops; the fused forward's epilogue otherwise (op forward), whose input
// and output may be laid out channels last (x_nhwc, y_nhwc; Note [Channels last] in
// engine/core/ops_internal.h).
std::shared_ptr<ConvPlan> make_plan(ConvOp op, const ConvGeom& g, DType dtype, bool has_bias,
                                    const ConvEpilogue* epi = nullptr, bool x_nhwc = false, bool y_nhwc = false) {
  auto plan = std::make_shared<ConvPlan>();
  try {
    const auto dt = dnnl_type(dtype);
    const memory::dims xd{g.N, g.C, g.H, g.W}, yd{g.N, g.O, g.Ho, g.Wo}, bd{g.O};
    const memory::dims wd = g.G == 1 ? memory::dims{g.O, g.C, g.kH, g.kW}
                                     : memory::dims{g.G, g.O / g.G, g.C / g.G, g.kH, g.kW};
    const memory::desc x_user(xd, dt, x_nhwc ? tag::nhwc : tag::nchw), y_user(yd, dt, y_nhwc ? tag::nhwc : tag::nchw);
    const memory::desc b_user(bd, dt, tag::x), w_user(wd, dt, g.G == 1 ? tag::oihw : tag::goihw);
    const bool blocked = blocked_layouts(op, g);
    // The fused (inference) convolution runs on NHWC activations where oneDNN has a kernel for
    // them (Note [Channels last]), so that NHWC tensors need no reorder; else on its choice.
    memory::desc x_any = epi ? memory::desc(xd, dt, tag::nhwc) : blocked ? memory::desc(xd, dt, tag::any) : x_user;
    memory::desc y_any = epi ? memory::desc(yd, dt, tag::nhwc) : blocked ? memory::desc(yd, dt, tag::any) : y_user;
    const memory::desc w_any = blocked ? memory::desc(wd, dt, tag::any) : w_user;
    const memory::dims strides{g.p.stride[0], g.p.stride[1]}, pad{g.p.padding[0], g.p.padding[1]};
    const memory::dims dil{g.p.dilation[0] - 1, g.p.dilation[1] - 1};
    const auto algo = dnnl::algorithm::convolution_direct;
    const auto fwd_kind = epi ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
    using fwd = dnnl::convolution_forward;
    auto fwd_desc = [&](bool bias) {
      return bias ? fwd::desc(fwd_kind, algo, x_any, w_any, b_user, y_any, strides, dil, pad, pad)
                  : fwd::desc(fwd_kind, algo, x_any, w_any, y_any, strides, dil, pad, pad);
    };
    dnnl::engine& eng = dnnl_engine();
    if (op == ConvOp::forward) {
      fwd::primitive_desc pd;
      try {
        pd = fwd::primitive_desc(fwd_desc(has_bias), epilogue_attr(epi), eng);
      } catch (const dnnl::error&) {
        if (!epi) throw;
        x_any = memory::desc(xd, dt, tag::any);  // no NHWC kernel for this convolution
        y_any = memory::desc(yd, dt, tag::any);
        pd = fwd::primitive_desc(fwd_desc(has_bias), epilogue_attr(epi), eng);
      }
      add_port(*plan, kX, DNNL_ARG_SRC, false, x_user, pd.src_desc());
      add_port(*plan, kW, DNNL_ARG_WEIGHTS, false, w_user, pd.weights_desc());
      if (has_bias) add_port(*plan, kB, DNNL_ARG_BIAS, false, b_user, pd.bias_desc());
      add_port(*plan, kY, DNNL_ARG_DST, true, y_user, pd.dst_desc());
      if (epi && epi->residual && plan->ports.back().reordered)
        plan->ports.back().preload = dnnl::reorder(dnnl::reorder::primitive_desc(eng, y_user, eng, pd.dst_desc()));
      plan->prim = fwd(pd);
    } else if (op == ConvOp::backward_input) {
      fwd::primitive_desc hint(fwd_desc(false), eng);
      using bwd = dnnl::convolution_backward_data;
      bwd::primitive_desc pd(bwd::desc(algo, x_any, w_any, y_any, strides, dil, pad, pad), eng, hint);
      add_port(*plan, kY, DNNL_ARG_DIFF_DST, false, y_user, pd.diff_dst_desc());
      add_port(*plan, kW, DNNL_ARG_WEIGHTS, false, w_user, pd.weights_desc());
      add_port(*plan, kX, DNNL_ARG_DIFF_SRC, true, x_user, pd.diff_src_desc());
      plan->prim = bwd(pd);
    } else {
      fwd::primitive_desc hint(fwd_desc(has_bias), eng);
      using bwd = dnnl::convolution_backward_weights;
      auto desc = has_bias ? bwd::desc(algo, x_any, w_any, b_user, y_any, strides, dil, pad, pad)
                           : bwd::desc(algo, x_any, w_any, y_any, strides, dil, pad, pad);
      bwd::primitive_desc pd(desc, eng, hint);
      add_port(*plan, kX, DNNL_ARG_SRC, false, x_user, pd.src_desc());
      add_port(*plan, kY, DNNL_ARG_DIFF_DST, false, y_user, pd.diff_dst_desc());
      add_port(*plan, kW, DNNL_ARG_DIFF_WEIGHTS, true, w_user, pd.diff_weights_desc());
      if (has_bias) add_port(*plan, kB, DNNL_ARG_DIFF_BIAS, true, b_user, pd.diff_bias_desc());
      plan->prim = bwd(pd);
    }
  } catch (const dnnl::error& e) {
    KILN_CHECK(dtype != DType::f32, DeviceError, conv_op_name(op), ": oneDNN failed: ", e.what());
    plan = std::make_shared<ConvPlan>();
    plan->via_f32 = true;
  }
  return plan;
}

// residual: what a sum post-op adds (Note [Conv epilogue]), dense like the output; null without one.
void execute(const ConvPlan& plan, void* const ptr[kSlots], const void* residual = nullptr) {
  dnnl::engine& eng = dnnl_engine();
  dnnl::stream& s = dnnl_stream();
  std::unordered_map<int, memory> args;
  for (const Port& port : plan.ports)  // an output in the user's layout holds the residual itself
    if (port.output && !port.reordered && residual && residual != ptr[port.slot])
      std::memcpy(ptr[port.slot], residual, port.user.get_size());
  std::vector<std::pair<const Port*, memory>> outputs;  // reordered outputs: (port, inner)
  int next = static_cast<int>(Scratch::dnnl0);
  for (const Port& port : plan.ports) {
    memory user(port.user, eng, ptr[port.slot]);
    if (!port.reordered) {
      args.emplace(port.arg, user);
      continue;
    }
    if (!port.output && port.slot == kW && is_read_only(ptr[kW])) {  // an inference weight: packed once
      args.emplace(port.arg, packed_weights(ptr[kW], port.user, port.inner, [&] {
                     memory packed(port.inner, eng);
                     port.reorder.execute(s, user, packed);
                     s.wait();
                     return packed;
                   }));
      continue;
    }
    memory inner(port.inner, eng, scratch(static_cast<Scratch>(next++), port.inner.get_size()));
    if (port.output && residual) {
      memory from(port.user, eng, const_cast<void*>(residual));
      port.preload.execute(s, from, inner);
    }
    if (port.output)
      outputs.emplace_back(&port, inner);
    else
      port.reorder.execute(s, user, inner);
    args.emplace(port.arg, inner);
  }
  plan.prim.execute(s, args);
  for (auto& [port, inner] : outputs) {
    memory user(port->user, eng, ptr[port->slot]);
    port->reorder.execute(s, inner, user);
  }
}

// ---- f64: direct loops over contiguous tensors ----

void conv_f64(ConvOp op, const ConvGeom& g, void* const ptr[kSlots]) {
  auto* x = static_cast<double*>(ptr[kX]);
  auto* w = static_cast<double*>(ptr[kW]);
  auto* y = static_cast<double*>(ptr[kY]);
  auto* b = static_cast<double*>(ptr[kB]);
  const int64_t Cg = g.C / g.G, Og = g.O / g.G;
  const int64_t s0 = g.p.stride[0], s1 = g.p.stride[1], p0 = g.p.padding[0], p1 = g.p.padding[1];
  const int64_t d0 = g.p.dilation[0], d1 = g.p.dilation[1];
  auto X = [&](int64_t n, int64_t c, int64_t h, int64_t ww) -> double& { return x[((n * g.C + c) * g.H + h) * g.W + ww]; };
  auto Y = [&](int64_t n, int64_t o, int64_t h, int64_t ww) -> double& { return y[((n * g.O + o) * g.Ho + h) * g.Wo + ww]; };
  auto Wt = [&](int64_t o, int64_t c, int64_t h, int64_t ww) -> double& { return w[((o * Cg + c) * g.kH + h) * g.kW + ww]; };
  if (op == ConvOp::forward) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t o = 0; o < g.O; ++o) {
        const int64_t c0 = o / Og * Cg;
        for (int64_t oh = 0; oh < g.Ho; ++oh)
          for (int64_t ow = 0; ow < g.Wo; ++ow) {
            double acc = b ? b[o] : 0.0;
            for (int64_t c = 0; c < Cg; ++c)
              for (int64_t kh = 0; kh < g.kH; ++kh) {
                const int64_t ih = oh * s0 - p0 + kh * d0;
                if (ih < 0 || ih >= g.H) continue;
                for (int64_t kw = 0; kw < g.kW; ++kw) {
                  const int64_t iw = ow * s1 - p1 + kw * d1;
                  if (iw >= 0 && iw < g.W) acc += X(n, c0 + c, ih, iw) * Wt(o, c, kh, kw);
                }
              }
            Y(n, o, oh, ow) = acc;
          }
      }
  } else if (op == ConvOp::backward_input) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t ci = 0; ci < g.C; ++ci) {
        const int64_t o0 = ci / Cg * Og, c = ci % Cg;
        for (int64_t ih = 0; ih < g.H; ++ih)
          for (int64_t iw = 0; iw < g.W; ++iw) {
            double acc = 0.0;
            for (int64_t o = o0; o < o0 + Og; ++o)
              for (int64_t kh = 0; kh < g.kH; ++kh) {
                const int64_t th = ih + p0 - kh * d0;
                if (th < 0 || th % s0 != 0 || th / s0 >= g.Ho) continue;
                for (int64_t kw = 0; kw < g.kW; ++kw) {
                  const int64_t tw = iw + p1 - kw * d1;
                  if (tw >= 0 && tw % s1 == 0 && tw / s1 < g.Wo) acc += Y(n, o, th / s0, tw / s1) * Wt(o, c, kh, kw);
                }
              }
            X(n, ci, ih, iw) = acc;
          }
      }
  } else {
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t o = 0; o < g.O; ++o)
      for (int64_t c = 0; c < Cg; ++c) {
        const int64_t ci = o / Og * Cg + c;
        for (int64_t kh = 0; kh < g.kH; ++kh)
          for (int64_t kw = 0; kw < g.kW; ++kw) {
            double acc = 0.0;
            for (int64_t n = 0; n < g.N; ++n)
              for (int64_t oh = 0; oh < g.Ho; ++oh) {
                const int64_t ih = oh * s0 - p0 + kh * d0;
                if (ih < 0 || ih >= g.H) continue;
                for (int64_t ow = 0; ow < g.Wo; ++ow) {
                  const int64_t iw = ow * s1 - p1 + kw * d1;
                  if (iw >= 0 && iw < g.W) acc += Y(n, o, oh, ow) * X(n, ci, ih, iw);
                }
              }
            Wt(o, c, kh, kw) = acc;
          }
      }
    if (b) {
#pragma omp parallel for schedule(static)
      for (int64_t o = 0; o < g.O; ++o) {
        double acc = 0.0;
        for (int64_t n = 0; n < g.N; ++n)
          for (int64_t i = 0; i < g.Ho * g.Wo; ++i) acc += y[(n * g.O + o) * g.Ho * g.Wo + i];
        b[o] = acc;
      }
    }
  }
}

bool is_output(ConvOp op, int slot) {
  switch (op) {
    case ConvOp::forward: return slot == kY;
    case ConvOp::backward_input: return slot == kX;
    case ConvOp::backward_weight: return slot == kW || slot == kB;
  }
  return false;
}

// Calls f(views) with contiguous views of t in dtype `want` (copies in the scratch
// slots from `first` on where a tensor is strided or of another dtype), then
// writes the outputs back.
template <class F>
void with_dense_views(ConvOp op, const TensorArg (&t)[kSlots], DType want, Scratch first, F&& f) {
  std::vector<DenseView> views;
  views.reserve(kSlots);
  TensorArg v[kSlots];
  for (int i = 0; i < kSlots; ++i) {
    if (!t[i].data) continue;  // an absent bias
    views.emplace_back(t[i], want, static_cast<Scratch>(static_cast<int>(first) + i), !is_output(op, i));
    v[i] = views.back().arg();
  }
  f(v);
  size_t k = 0;
  for (int i = 0; i < kSlots; ++i)
    if (t[i].data) {
      if (is_output(op, i)) views[k].finish();
      ++k;
    }
}

void run_conv(ConvOp op, const ConvGeom& g, const TensorArg (&t)[kSlots]) {
  const DType dt = t[kY].dtype;
  const bool has_bias = t[kB].data != nullptr;
  KILN_CHECK(!has_bias || (t[kB].dtype == dt && t[kB].numel() == g.O), ShapeError, conv_op_name(op), ": bias ",
             shape_str(t[kB].shape), " ", dtype_name(t[kB].dtype), " does not fit ", g.O, " channels of ",
             dtype_name(dt));
  if (dt == DType::f64) {
    with_dense_views(op, t, dt, Scratch::dense0, [&](const TensorArg (&v)[kSlots]) {
      void* ptr[kSlots] = {v[kX].data, v[kW].data, v[kY].data, v[kB].data};
      conv_f64(op, g, ptr);
    });
    return;
  }
  KILN_CHECK(dt == DType::f32 || dt == DType::bf16 || dt == DType::f16, DTypeError, conv_op_name(op), ": no ",
             dtype_name(dt), " kernel on the CPU");
  PlanKey key(conv_op_name(op));
  key.add(static_cast<int64_t>(dt)).add(has_bias);
  key.add({g.N, g.C, g.H, g.W, g.O, g.kH, g.kW, g.G});
  for (int i = 0; i < 2; ++i) key.add({g.p.stride[i], g.p.padding[i], g.p.dilation[i]});
  const OneThreadIf serial(g.macs() < kSerialWork);  // Note [Serial small kernels]
  auto plan = cached_plan<ConvPlan>(key, [&] { return make_plan(op, g, dt, has_bias); });
  if (plan->via_f32) {
    with_dense_views(op, t, DType::f32, Scratch::cvt0, [&](const TensorArg (&v)[kSlots]) { run_conv(op, g, v); });
    return;
  }
  with_dense_views(op, t, dt, Scratch::dense0, [&](const TensorArg (&v)[kSlots]) {
    void* ptr[kSlots] = {v[kX].data, v[kW].data, v[kY].data, v[kB].data};
    execute(*plan, ptr);
  });
}

}  // namespace

void CpuBackend::conv2d_forward(const TensorArg& out, const TensorArg& in, const TensorArg& weight,
                                const TensorArg& bias, const Conv2dParams& p) {
  const ConvGeom g = geometry(ConvOp::forward, in, weight, out, p);
  if (out.numel() == 0) return;
  run_conv(ConvOp::forward, g, {in, weight, out, bias});
}

void CpuBackend::conv2d_fused_forward(const TensorArg& out, const TensorArg& in, const TensorArg& weight,
                                      const TensorArg& bias, const TensorArg& residual, const Conv2dParams& p,
                                      const ConvEpilogue& e) {
  const ConvGeom g = geometry(ConvOp::forward, in, weight, out, p);
  KILN_CHECK(out.dtype == DType::f32, DTypeError, "conv2d_fused_forward: no ", dtype_name(out.dtype),
             " kernel on the CPU (f32 only; the front end decomposes the others)");
  KILN_CHECK((in.is_contiguous() || is_nhwc(in)) && (out.is_contiguous() || is_nhwc(out)) && weight.is_contiguous() &&
                 (!bias.data || bias.is_contiguous()),
             ValueError, "conv2d_fused_forward: the input and output must be contiguous or channels last, the weight "
             "and bias contiguous");
  const bool x_nhwc = !in.is_contiguous(), y_nhwc = !out.is_contiguous();
  KILN_CHECK(!bias.data || (bias.dtype == DType::f32 && bias.numel() == g.O), ShapeError,
             "conv2d_fused_forward: bias ", shape_str(bias.shape), " ", dtype_name(bias.dtype), " does not fit ", g.O,
             " channels of f32");
  KILN_CHECK(e.residual == (residual.data != nullptr), ValueError, "conv2d_fused_forward: the epilogue ",
             e.residual ? "adds a residual but none was given" : "adds no residual but one was given");
  KILN_CHECK(!residual.data || (residual.dtype == DType::f32 && residual.shape == out.shape &&
                                 (y_nhwc ? is_nhwc(residual) : residual.is_contiguous())),
             ShapeError, "conv2d_fused_forward: residual ", shape_str(residual.shape), " ", dtype_name(residual.dtype),
             " must be an f32 tensor of the output's shape ", shape_str(out.shape), " and layout (",
             y_nhwc ? "channels last" : "contiguous", ")");
  if (out.numel() == 0) return;
  const bool has_bias = bias.data != nullptr;
  PlanKey key("conv2d_fused_forward");
  key.add(has_bias).add({g.N, g.C, g.H, g.W, g.O, g.kH, g.kW, g.G});
  for (int i = 0; i < 2; ++i) key.add({g.p.stride[i], g.p.padding[i], g.p.dilation[i]});
  key.add({static_cast<int64_t>(e.activation), std::bit_cast<uint32_t>(e.lo), std::bit_cast<uint32_t>(e.hi),
           int64_t{e.residual}, int64_t{x_nhwc}, int64_t{y_nhwc}});
  const OneThreadIf serial(g.macs() < kSerialWork);  // Note [Serial small kernels]
  auto plan = cached_plan<ConvPlan>(
      key, [&] { return make_plan(ConvOp::forward, g, DType::f32, has_bias, &e, x_nhwc, y_nhwc); });
  void* ptr[kSlots] = {first_element(in), first_element(weight), first_element(out),
                       has_bias ? first_element(bias) : nullptr};
  execute(*plan, ptr, residual.data ? first_element(residual) : nullptr);
}

void CpuBackend::conv2d_backward_input(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& weight,
                                       const Conv2dParams& p) {
  const ConvGeom g = geometry(ConvOp::backward_input, grad_in, weight, grad_out, p);
  if (grad_in.numel() == 0) return;
  run_conv(ConvOp::backward_input, g, {grad_in, weight, grad_out, TensorArg{}});
}

void CpuBackend::conv2d_backward_weight(const TensorArg& grad_weight, const TensorArg& grad_bias,
                                        const TensorArg& grad_out, const TensorArg& in, const Conv2dParams& p) {
  const ConvGeom g = geometry(ConvOp::backward_weight, in, grad_weight, grad_out, p);
  if (grad_weight.numel() == 0) return;
  if (grad_out.numel() == 0) {  // an empty batch: no gradient
    fill_zero(grad_weight);
    if (grad_bias.data) fill_zero(grad_bias);
    return;
  }
  run_conv(ConvOp::backward_weight, g, {in, grad_weight, grad_out, grad_bias});
}

}  // namespace kiln::cpu
