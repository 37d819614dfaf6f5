// CpuBackend::qlinear_forward: the int8 linear layer through oneDNN's int8 matmul (u8 source
// [M, K] x s8 weight [K, N] (our [N, K] read transposed), s32 accumulation; its VNNI brgemm
// kernel: ONEDNN_VERBOSE names it; a CPU without VNNI runs it in f32, cpu_qfloat.cpp).
//
// The arithmetic is backend.h's QuantizedParams in oneDNN 2.x attributes
// (dev_guide_attributes_quantization; dev_guide_matmul, int8):
//   dst = post_ops(output_scale[n] * (matmul(src - zp_src, wei) + bias_s32[n])) + zp_dst,
// rounded to nearest even and saturated for a u8 dst, output_scale[n] = in_scale *
// weight_scales[n] (/ out_scale for a u8 dst), the ReLU an eltwise post-op, zero points runtime
// arguments. The scales and M are part of the plan and its key (Note [Plan cache]). The weight
// is read in place, in its own layout: no reorder per call and nothing cached that could go
// stale when a layer's weight changes.
#include <bit>
#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_qcommon.h"
#include "backends/cpu/dnnl_context.h"
#include "engine/core/error.h"

namespace kiln::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;

struct QLinearPlan {
  dnnl::matmul prim;
  memory::desc src, wei, dst, bias, zp;
};

std::shared_ptr<QLinearPlan> make_plan(int64_t M, int64_t K, int64_t N, memory::data_type dst_dt, bool has_bias,
                                       bool relu, const std::vector<float>& scales) {
  using dt = memory::data_type;
  auto plan = std::make_shared<QLinearPlan>();
  plan->src = memory::desc({M, K}, dt::u8, tag::ab);
  plan->wei = memory::desc({K, N}, dt::s8, tag::ba);  // [N, K] row-major
  plan->dst = memory::desc({M, N}, dst_dt, tag::ab);
  plan->bias = memory::desc({1, N}, dt::s32, tag::ab);
  plan->zp = memory::desc({1}, dt::s32, tag::x);
  const dnnl::primitive_attr attr = int8_attr(scales, dst_dt == dt::u8, relu);
  try {
    dnnl::engine& eng = dnnl_engine();
    auto desc = has_bias ? dnnl::matmul::desc(plan->src, plan->wei, plan->bias, plan->dst)
                         : dnnl::matmul::desc(plan->src, plan->wei, plan->dst);
    plan->prim = dnnl::matmul(dnnl::matmul::primitive_desc(desc, attr, eng));
  } catch (const dnnl::error& e) {
    throw DeviceError(detail::str_cat("qlinear_forward: oneDNN has no int8 matmul for input [", M, ", ", K,
                                      "] and weight [", N, ", ", K, "]: ", e.what()));
  }
  return plan;
}

}  // namespace

void CpuBackend::qlinear_forward(const TensorArg& out, const TensorArg& in, const TensorArg& weight,
                                 const TensorArg& bias, const QuantizedParams& q) {
  KILN_CHECK(in.shape.size() == 2 && weight.shape.size() == 2 && out.shape.size() == 2 &&
                 in.shape[1] == weight.shape[1] && out.shape[0] == in.shape[0] && out.shape[1] == weight.shape[0],
             ShapeError, "qlinear_forward: input ", shape_str(in.shape), ", weight ", shape_str(weight.shape),
             ", output ", shape_str(out.shape), " do not fit [M, K] x [O, K] -> [M, O]");
  const int64_t M = in.shape[0], K = in.shape[1], N = weight.shape[0];
  check_quantized_args("qlinear_forward", out, in, weight, bias, q, N);
  if (!int8_dot_exact()) return qlinear_in_float(*this, out, in, weight, bias, q);  // Note [Int8 without VNNI]
  const bool u8_out = out.dtype == DType::u8;
  std::vector<float> scales(static_cast<size_t>(N));
  for (int64_t c = 0; c < N; ++c) scales[c] = q.in_scale * q.weight_scales[c] / (u8_out ? q.out_scale : 1.0f);
  PlanKey key("qlinear");
  key.add({M, K, N, int64_t{u8_out}, int64_t{bias.data != nullptr}, int64_t{q.relu}});
  for (float f : scales) key.add(static_cast<int64_t>(std::bit_cast<uint32_t>(f)));
  auto plan = cached_plan<QLinearPlan>(key, [&] {
    return make_plan(M, K, N, u8_out ? memory::data_type::u8 : memory::data_type::f32, bias.data != nullptr, q.relu,
                     scales);
  });
  dnnl::engine& eng = dnnl_engine();
  int32_t zp_src = q.in_zero_point, zp_dst = q.out_zero_point;
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(plan->src, eng, first_element(in))},
                                       {DNNL_ARG_WEIGHTS, memory(plan->wei, eng, first_element(weight))},
                                       {DNNL_ARG_DST, memory(plan->dst, eng, first_element(out))}};
  args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, memory(plan->zp, eng, &zp_src));
  if (u8_out) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, memory(plan->zp, eng, &zp_dst));
  if (bias.data) args.emplace(DNNL_ARG_BIAS, memory(plan->bias, eng, first_element(bias)));
  plan->prim.execute(dnnl_stream(), args);
}

}  // namespace kiln::cpu
