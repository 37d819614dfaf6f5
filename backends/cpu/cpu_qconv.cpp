// CpuBackend::qconv2d_forward: int8 convolution through oneDNN's int8 convolution (u8 source x
// s8 weights, s32 accumulation; its VNNI or AMX kernels: ONEDNN_VERBOSE names the one it picks;
// a CPU without VNNI runs the layer in f32, Note [Int8 without VNNI] in cpu_qfloat.cpp). The linear layer is cpu_qlinear.cpp (oneDNN's int8 matmul).
//
// The arithmetic is backend.h's QuantizedParams, expressed in oneDNN 2.x attributes
// (dev_guide_attributes_quantization, "Quantization Model"; dev_guide_convolution, int8):
//   dst = post_ops(output_scale[c] * (conv(src - zp_src, wei) + bias_s32[c])) + zp_dst,
// rounded to nearest even and saturated for a u8 dst, with output_scale[c] = in_scale *
// weight_scales[c] (/ out_scale for a u8 dst) and the ReLU as an eltwise post-op. Zero points
// are runtime arguments; oneDNN 2.6 has no convolution with runtime output scales (every
// implementation refuses DNNL_RUNTIME_F32_VAL there), so the scales are part of the plan and of
// its key: a plan is cached per layer and shape (Note [Plan cache]), with the layer's weight
// reordered once (Note [Reordered weight]).
#include <bit>
#include <cstring>
#include <mutex>
#include <vector>
#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_qcommon.h"
#include "backends/cpu/dnnl_context.h"
#include "engine/core/error.h"

namespace kiln::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;

struct QGeom {
  int64_t N, C, H, W, O, kH, kW, Ho, Wo, G;
  Conv2dParams p;
};

struct QConvPlan {
  dnnl::convolution_forward prim;
  memory::desc src_user, src_inner, wei_user, wei_inner, dst_user, dst_inner, bias, zp;
  dnnl::reorder src_reorder, wei_reorder, dst_reorder;  // set where user != inner
  // Note [Reordered weight]: the last weight reordered to wei_inner (with its zero-point
  // compensation), and the bytes it was made from.
  std::mutex wei_mutex;
  std::vector<char> wei_source;
  memory wei_cached;
};

// Note [Reordered weight]: reordering an s8 weight to oneDNN's blocked layout also computes the
// source zero point's compensation; at batch 1 that cost more than the convolution (62 us vs 41 us
// for 64x32x3x3). So a plan keeps the last weight it reordered and the bytes it came from, and
// reorders again only when the weight's bytes differ (a memcmp: ~1 us for that weight). The
// check is by content, never by address, so a weight changed in place or a new layer at a
// recycled address cannot pick up a stale copy. Plans are shared between threads: the check runs
// under the plan's mutex and each call holds its own handle to the buffer it uses.
memory reordered_weight(QConvPlan& plan, memory user) {
  const auto* bytes = static_cast<const char*>(user.get_data_handle());
  const size_t n = plan.wei_user.get_size();
  std::lock_guard<std::mutex> lock(plan.wei_mutex);
  if (!plan.wei_cached || plan.wei_source.size() != n || std::memcmp(plan.wei_source.data(), bytes, n) != 0) {
    memory fresh(plan.wei_inner, dnnl_engine());
    plan.wei_reorder.execute(dnnl_stream(), user, fresh);
    plan.wei_source.assign(bytes, bytes + n);
    plan.wei_cached = fresh;
  }
  return plan.wei_cached;
}

std::shared_ptr<QConvPlan> make_plan(const char* op, const QGeom& g, memory::data_type dst_dt, bool has_bias,
                                     bool relu, const std::vector<float>& scales) {
  auto plan = std::make_shared<QConvPlan>();
  using dt = memory::data_type;
  const memory::dims xd{g.N, g.C, g.H, g.W}, yd{g.N, g.O, g.Ho, g.Wo}, bd{g.O};
  const memory::dims wd = g.G == 1 ? memory::dims{g.O, g.C, g.kH, g.kW}
                                   : memory::dims{g.G, g.O / g.G, g.C / g.G, g.kH, g.kW};
  plan->src_user = memory::desc(xd, dt::u8, tag::nchw);
  plan->dst_user = memory::desc(yd, dst_dt, tag::nchw);
  plan->wei_user = memory::desc(wd, dt::s8, g.G == 1 ? tag::oihw : tag::goihw);
  plan->bias = memory::desc(bd, dt::s32, tag::x);
  plan->zp = memory::desc({1}, dt::s32, tag::x);
  const memory::dims strides{g.p.stride[0], g.p.stride[1]}, pad{g.p.padding[0], g.p.padding[1]};
  const memory::dims dil{g.p.dilation[0] - 1, g.p.dilation[1] - 1};
  const dnnl::primitive_attr attr = int8_attr(scales, dst_dt == dt::u8, relu);
  using fwd = dnnl::convolution_forward;
  const memory::desc x_any(xd, dt::u8, tag::any), w_any(wd, dt::s8, tag::any), y_any(yd, dst_dt, tag::any);
  const auto kind = dnnl::prop_kind::forward_inference;
  const auto algo = dnnl::algorithm::convolution_direct;
  try {
    auto desc = has_bias ? fwd::desc(kind, algo, x_any, w_any, plan->bias, y_any, strides, dil, pad, pad)
                         : fwd::desc(kind, algo, x_any, w_any, y_any, strides, dil, pad, pad);
    dnnl::engine& eng = dnnl_engine();
    fwd::primitive_desc pd(desc, attr, eng);
    plan->src_inner = pd.src_desc();
    plan->wei_inner = pd.weights_desc();
    plan->dst_inner = pd.dst_desc();
    if (plan->src_inner != plan->src_user)
      plan->src_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, plan->src_user, eng, plan->src_inner));
    if (plan->wei_inner != plan->wei_user)
      plan->wei_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, plan->wei_user, eng, plan->wei_inner));
    if (plan->dst_inner != plan->dst_user)
      plan->dst_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, plan->dst_inner, eng, plan->dst_user));
    plan->prim = fwd(pd);
  } catch (const dnnl::error& e) {
    throw DeviceError(detail::str_cat(op, ": oneDNN has no int8 convolution for input [", g.N, ", ", g.C, ", ", g.H,
                                      ", ", g.W, "] and weight [", g.O, ", ", g.C / g.G, ", ", g.kH, ", ", g.kW,
                                      "]: ", e.what()));
  }
  return plan;
}

}  // namespace

dnnl::primitive_attr int8_attr(const std::vector<float>& scales, bool u8_dst, bool relu) {
  dnnl::primitive_attr attr;
  attr.set_output_scales(1 << 1, scales);
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  if (u8_dst) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
  if (relu) {
    dnnl::post_ops po;
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(po);
  }
  return attr;
}

void check_quantized_args(const char* op, const TensorArg& out, const TensorArg& in, const TensorArg& w,
                          const TensorArg& b, const QuantizedParams& q, int64_t O) {
  KILN_CHECK(in.dtype == DType::u8 && w.dtype == DType::i8 && (out.dtype == DType::f32 || out.dtype == DType::u8),
             DTypeError, op, ": expects u8 input, i8 weight and an f32 or u8 output, got ", dtype_name(in.dtype), ", ",
             dtype_name(w.dtype), ", ", dtype_name(out.dtype));
  KILN_CHECK(in.is_contiguous() && w.is_contiguous() && out.is_contiguous(), ValueError, op,
             ": tensors must be contiguous");
  KILN_CHECK(!b.data || (b.dtype == DType::i32 && b.numel() == O && b.is_contiguous()), DTypeError, op,
             ": bias must be a contiguous i32 [", O, "]");
  KILN_CHECK(static_cast<int64_t>(q.weight_scales.size()) == O, ValueError, op, ": ", q.weight_scales.size(),
             " weight scales for ", O, " output channels");
  KILN_CHECK(q.in_scale > 0 && q.out_scale > 0, ValueError, op, ": scales must be > 0");
  KILN_CHECK(q.in_zero_point >= 0 && q.in_zero_point <= 255 && q.out_zero_point >= 0 && q.out_zero_point <= 255,
             ValueError, op, ": u8 zero points must be in [0, 255]");
}

namespace {

void run(const char* op, const QGeom& g, const TensorArg& out, const TensorArg& in, const TensorArg& w,
         const TensorArg& b, const QuantizedParams& q) {
  const bool u8_out = out.dtype == DType::u8;
  const auto dst_dt = u8_out ? memory::data_type::u8 : memory::data_type::f32;
  std::vector<float> scales(static_cast<size_t>(g.O));
  for (int64_t c = 0; c < g.O; ++c) scales[c] = q.in_scale * q.weight_scales[c] / (u8_out ? q.out_scale : 1.0f);
  PlanKey key("qconv2d");
  key.add({g.N, g.C, g.H, g.W, g.O, g.kH, g.kW, g.G, g.p.stride[0], g.p.stride[1], g.p.padding[0], g.p.padding[1],
           g.p.dilation[0], g.p.dilation[1], int64_t{u8_out}, int64_t{b.data != nullptr}, int64_t{q.relu}});
  for (float f : scales) key.add(static_cast<int64_t>(std::bit_cast<uint32_t>(f)));
  auto plan = cached_plan<QConvPlan>(key, [&] { return make_plan(op, g, dst_dt, b.data != nullptr, q.relu, scales); });
  int32_t zp_src = q.in_zero_point, zp_dst = q.out_zero_point;
  dnnl::engine& eng = dnnl_engine();
  dnnl::stream& s = dnnl_stream();
  memory src_user(plan->src_user, eng, first_element(in)), wei_user(plan->wei_user, eng, first_element(w));
  memory dst_user(plan->dst_user, eng, first_element(out));
  memory src = src_user, wei = wei_user, dst = dst_user;
  if (plan->src_reorder) {
    src = memory(plan->src_inner, eng, scratch(Scratch::dnnl0, plan->src_inner.get_size()));
    plan->src_reorder.execute(s, src_user, src);
  }
  if (plan->wei_reorder) wei = reordered_weight(*plan, wei_user);
  if (plan->dst_reorder) dst = memory(plan->dst_inner, eng, scratch(Scratch::dnnl2, plan->dst_inner.get_size()));
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
  args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, memory(plan->zp, eng, &zp_src));
  if (u8_out) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, memory(plan->zp, eng, &zp_dst));
  if (b.data) args.emplace(DNNL_ARG_BIAS, memory(plan->bias, eng, first_element(b)));
  plan->prim.execute(s, args);
  if (plan->dst_reorder) plan->dst_reorder.execute(s, dst, dst_user);
}

}  // namespace

void CpuBackend::qconv2d_forward(const TensorArg& out, const TensorArg& in, const TensorArg& weight,
                                 const TensorArg& bias, const Conv2dParams& p, const QuantizedParams& q) {
  KILN_CHECK(in.shape.size() == 4 && weight.shape.size() == 4 && out.shape.size() == 4, ShapeError,
             "qconv2d_forward: input ", shape_str(in.shape), ", weight ", shape_str(weight.shape), ", output ",
             shape_str(out.shape), " must be 4-d");
  const QGeom g{in.shape[0], in.shape[1], in.shape[2], in.shape[3], weight.shape[0], weight.shape[2],
                weight.shape[3], out.shape[2], out.shape[3], p.groups, p};
  KILN_CHECK(g.G >= 1 && g.C % g.G == 0 && g.O % g.G == 0 && weight.shape[1] * g.G == g.C &&
                 out.shape[0] == g.N && out.shape[1] == g.O,
             ShapeError, "qconv2d_forward: input ", shape_str(in.shape), ", weight ", shape_str(weight.shape),
             ", output ", shape_str(out.shape), " do not fit groups=", g.G);
  check_quantized_args("qconv2d_forward", out, in, weight, bias, q, g.O);
  if (!int8_dot_exact()) return qconv2d_in_float(*this, out, in, weight, bias, p, q);  // Note [Int8 without VNNI]
  run("qconv2d_forward", g, out, in, weight, bias, q);
}

}  // namespace kiln::cpu
