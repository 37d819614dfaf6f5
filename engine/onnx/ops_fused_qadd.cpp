// kiln.fused.AddQuantize(a, b; relu, y_scale, y_zero_point[, a_scale, a_zero_point][, b_scale,
// b_zero_point]) -> q u8 [, v], put in place of [DequantizeLinear ->] Add [-> Relu] -> QuantizeLinear
// by FuseAddQuantize (rewrite_qadd.cpp); an input with a_scale (b_scale) is u8, dequantized first:
//   v = [relu](a + b),  q = saturate(round_half_even(v / y_scale) + y_zero_point)   (ONNX Add, Relu,
// QuantizeLinear in f32, as the executor computes them: ops_quant.cpp). The second output, v, only
// when the node has two. On the CPU, with a and b of one shape, one pass (OpenMP) computing
// each element as those ops do, so the outputs are theirs bit for bit; otherwise (broadcasting,
// other dtypes or devices) the ops themselves.
#include <cmath>

#include "engine/core/ops.h"
#include "engine/onnx/op_context.h"
#include "engine/onnx/quantize_cpu.h"
#include "engine/onnx/rewrite.h"

namespace kiln::onnx {
namespace {

// An input as FuseAddQuantize gave it: f32, or u8 with its DequantizeLinear's scale and zero point.
struct Operand {
  Tensor t;
  bool quantized = false;
  double scale = 1, zero_point = 0;
  // The element DequantizeLinear gives for u8 x: (x - zero point) * scale in f64, then f32
  // (ops_quant.cpp), or x itself.
  float at(const void* data, int64_t i) const {
    if (!quantized) return static_cast<const float*>(data)[i];
    return static_cast<float>((static_cast<double>(static_cast<const uint8_t*>(data)[i]) - zero_point) * scale);
  }
  // The input as the float path's f32 tensor (the composed path).
  Tensor dequantized() const {
    if (!quantized) return t;
    return mul(sub(t.to(DType::f64), Tensor::scalar(zero_point, DType::f64, t.device())),
               Tensor::scalar(scale, DType::f64, t.device()))
        .to(DType::f32);
  }
};

Operand operand(OpContext& c, size_t k) {
  const std::string p = k == 0 ? "a_" : "b_";
  Operand o;
  o.t = c.input(k);
  o.quantized = c.has_attr(p + "scale");
  if (!o.quantized) return o;
  if (o.t.dtype() != DType::u8) c.fail("input " + std::to_string(k) + " must be UINT8 (its DequantizeLinear's), got " + dtype_name(o.t.dtype()));
  o.scale = static_cast<double>(static_cast<float>(c.attr_float(p + "scale", 1)));
  o.zero_point = static_cast<double>(c.attr_int(p + "zero_point", 0));
  return o;
}

std::vector<Tensor> add_quantize(OpContext& c) {
  const Operand oa = operand(c, 0), ob = operand(c, 1);
  const Tensor& a = oa.t;
  const Tensor& b = ob.t;
  const bool relu = c.attr_int("relu", 0) != 0, f32_out = c.node().outputs.size() > 1;
  const auto scale = static_cast<float>(c.attr_float("y_scale", 1));
  const auto zero_point = static_cast<float>(c.attr_int("y_zero_point", 0));
  auto fits = [](const Operand& o) { return o.t.dtype() == (o.quantized ? DType::u8 : DType::f32); };
  if (fits(oa) && fits(ob) && a.shape() == b.shape() &&
      a.device().type == DeviceType::cpu && b.device().type == DeviceType::cpu) {
    const Tensor ac = a.contiguous(), bc = b.contiguous();
    Tensor q = Tensor::empty(a.shape(), DType::u8, a.device());
    Tensor v = f32_out ? Tensor::empty(a.shape(), DType::f32, a.device()) : Tensor();
    const void* pa = oa.quantized ? static_cast<const void*>(ac.data_ptr<const uint8_t>()) : ac.data_ptr<const float>();
    const void* pb = ob.quantized ? static_cast<const void*>(bc.data_ptr<const uint8_t>()) : bc.data_ptr<const float>();
    uint8_t* pq = q.data_ptr<uint8_t>();
    float* pv = f32_out ? v.data_ptr<float>() : nullptr;
    const int64_t n = a.numel();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      float s = oa.at(pa, i) + ob.at(pb, i);
      if (relu) s = s > 0 ? s : (s == s ? 0.0f : s);  // Relu: max(x, 0), NaN stays NaN
      if (pv) pv[i] = s;
      pq[i] = quantize_u8(s, scale, zero_point);
    }
    return f32_out ? std::vector<Tensor>{q, v} : std::vector<Tensor>{q};
  }
  Tensor s = add(oa.dequantized(), ob.dequantized());
  if (relu) s = apply_unary(UnaryOp::relu, s);
  const Tensor sf = s.to(DType::f32);
  Tensor q = clamp(add(round(div(sf, Tensor::scalar(scale, DType::f32, s.device()))),
                       Tensor::scalar(zero_point, DType::f32, s.device())), 0, 255).to(DType::u8);
  return f32_out ? std::vector<Tensor>{q, s} : std::vector<Tensor>{q};
}

}  // namespace

Tensor quantize_u8_cpu(const Tensor& x, float scale, float zero_point) {
  const Tensor xc = x.contiguous();
  Tensor q = Tensor::empty(x.shape(), DType::u8, x.device());
  const float* px = xc.data_ptr<const float>();
  uint8_t* pq = q.data_ptr<uint8_t>();
  const int64_t n = x.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) pq[i] = quantize_u8(px[i], scale, zero_point);
  return q;
}

void register_qadd_fused_ops(OpTable& t) { t[std::string(kFusedDomain) + ".AddQuantize"] = add_quantize; }

}  // namespace kiln::onnx
