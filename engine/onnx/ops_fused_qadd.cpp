// kiln.fused.AddQuantize(a, b; relu, y_scale, y_zero_point) -> q u8 [, v], put in place of
// Add [-> Relu] -> QuantizeLinear by FuseAddQuantize (rewrite_qadd.cpp):
//   v = [relu](a + b),  q = saturate(round_half_even(v / y_scale) + y_zero_point)   (ONNX Add, Relu,
// QuantizeLinear in f32, as the executor computes them: ops_quant.cpp). The second output, v, only
// when the node has two. On the CPU, with a and b FLOAT of one shape, one pass (OpenMP) computing
// each element as those ops do, so the outputs are theirs bit for bit; otherwise (broadcasting,
// other dtypes or devices) the ops themselves.
#include <cmath>

#include "engine/core/ops.h"
#include "engine/onnx/op_context.h"
#include "engine/onnx/rewrite.h"

namespace kiln::onnx {
namespace {

std::vector<Tensor> add_quantize(OpContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  const bool relu = c.attr_int("relu", 0) != 0, f32_out = c.node().outputs.size() > 1;
  const auto scale = static_cast<float>(c.attr_float("y_scale", 1));
  const auto zero_point = static_cast<float>(c.attr_int("y_zero_point", 0));
  if (a.dtype() == DType::f32 && b.dtype() == DType::f32 && a.shape() == b.shape() &&
      a.device().type == DeviceType::cpu && b.device().type == DeviceType::cpu) {
    const Tensor ac = a.contiguous(), bc = b.contiguous();
    Tensor q = Tensor::empty(a.shape(), DType::u8, a.device());
    Tensor v = f32_out ? Tensor::empty(a.shape(), DType::f32, a.device()) : Tensor();
    const float* pa = ac.data_ptr<const float>();
    const float* pb = bc.data_ptr<const float>();
    uint8_t* pq = q.data_ptr<uint8_t>();
    float* pv = f32_out ? v.data_ptr<float>() : nullptr;
    const int64_t n = a.numel();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      float s = pa[i] + pb[i];
      if (relu) s = s > 0 ? s : (s == s ? 0.0f : s);  // Relu: max(x, 0), NaN stays NaN
      if (pv) pv[i] = s;
      const float r = std::nearbyint(s / scale) + zero_point;  // round half to even (default mode)
      pq[i] = static_cast<uint8_t>(r > 255 ? 255 : r >= 0 ? r : 0);  // NaN -> 0
    }
    return f32_out ? std::vector<Tensor>{q, v} : std::vector<Tensor>{q};
  }
  Tensor s = add(a, b);
  if (relu) s = apply_unary(UnaryOp::relu, s);
  const Tensor sf = s.to(DType::f32);
  Tensor q = clamp(add(round(div(sf, Tensor::scalar(scale, DType::f32, s.device()))),
                       Tensor::scalar(zero_point, DType::f32, s.device())), 0, 255).to(DType::u8);
  return f32_out ? std::vector<Tensor>{q, s} : std::vector<Tensor>{q};
}

}  // namespace

void register_qadd_fused_ops(OpTable& t) { t[std::string(kFusedDomain) + ".AddQuantize"] = add_quantize; }

}  // namespace kiln::onnx
