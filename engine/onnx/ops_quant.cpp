// ONNX quantization ops (linear quantization, ONNX Operators.md): QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul,
// QLinearConv. Values are computed in f32/f64 with engine ops; rounding is half to even
// and results saturate to the range of the output type, as the spec says.
#include <cmath>
#include <limits>

#include "engine/onnx/op_context.h"
#include "engine/onnx/quantize_cpu.h"

namespace kiln::onnx {

namespace {

Tensor scalar(double v, DType t, Device d) { return Tensor::scalar(v, t, d); }

// A scale or zero point, per tensor (0-d or [1]) or per `axis` ([x.size(axis)]), shaped
// to broadcast against x (of shape `x_shape`). A per-axis one with another length than
// x.size(axis) fails naming the node (ONNX's per-axis quantization).
Tensor per_axis(const OpContext& c, const Tensor& p, const Shape& x_shape, int64_t axis) {
  const auto rank = static_cast<int64_t>(x_shape.size());
  if (p.dim() == 0 || (p.dim() == 1 && p.size(0) == 1)) return p.reshape({});
  if (p.dim() != 1) c.fail("a scale or zero point must be a scalar or 1-d, got " + shape_str(p.shape()));
  const auto a = size_t(wrap_axis(c, axis, rank));
  if (p.size(0) != x_shape[a])
    c.fail("per-axis scale or zero point has " + std::to_string(p.size(0)) + " entries, but axis " +
           std::to_string(axis) + " of the input " + shape_str(x_shape) + " has " + std::to_string(x_shape[a]));
  Shape s(static_cast<size_t>(rank), 1);
  s[a] = p.size(0);
  return p.reshape(s);
}

double lowest(DType t);
double highest(DType t);

// x's zero point: of x's type (the spec); one of another integer type (a model not checked by
// libonnx) must hold values of x's range, else the node fails naming the value.
Tensor zero_point_of(const OpContext& c, const Tensor& x, const Tensor& zp) {
  if (zp.dtype() == x.dtype()) return zp;
  if (!is_integral(zp.dtype()) || !is_integral(x.dtype()))
    c.fail(std::string("zero point of type ") + dtype_name(zp.dtype()) + " for an input of type " + dtype_name(x.dtype()));
  for (double v : zp.to(DType::f64).to_vector<double>())
    if (v < lowest(x.dtype()) || v > highest(x.dtype()))
      c.fail("zero point " + std::to_string(static_cast<int64_t>(v)) + " is out of the range of the " +
             dtype_name(x.dtype()) + " input [" + std::to_string(static_cast<int64_t>(lowest(x.dtype()))) + ", " +
             std::to_string(static_cast<int64_t>(highest(x.dtype()))) + "]");
  return zp;
}

double lowest(DType t) { return t == DType::u8 ? 0 : t == DType::i8 ? -128 : t == DType::i32 ? -2147483648.0 : -INFINITY; }
double highest(DType t) { return t == DType::u8 ? 255 : t == DType::i8 ? 127 : t == DType::i32 ? 2147483647.0 : INFINITY; }

// round(v) + zp saturated to `out` (v already divided by the scale), in f64.
Tensor saturate(const Tensor& v, DType out) { return clamp(round(v), lowest(out), highest(out)).to(out); }

std::vector<Tensor> quantize_op(OpContext& c) {
  const Tensor& x = c.input(0);
  int64_t axis = c.attr_int("axis", 1);
  // x / scale in the input's precision (as the reference implementation), then round
  Tensor scale = per_axis(c, c.input(1).to(x.dtype()), x.shape(), axis);
  DType out = c.has_input(2) ? c.input(2).dtype() : DType::u8;
  if (out != DType::u8 && out != DType::i8) c.fail(std::string("zero point must be UINT8 or INT8, got ") + dtype_name(out));
  Tensor zp = c.has_input(2) ? per_axis(c, c.input(2).to(DType::f64), x.shape(), axis) : scalar(0, DType::f64, x.device());
  // In f32 for an f32 x: round(x / scale) is an integer, exact with the zero point added while
  // below 2^24, and beyond that it saturates either way; two passes fewer, none in f64.
  if (x.dtype() == DType::f32 && out == DType::u8 && x.device().type == DeviceType::cpu && scale.numel() == 1 &&
      zp.numel() == 1)  // one pass (quantize_cpu.h), the same values
    return {quantize_u8_cpu(x, scale.item<float>(), static_cast<float>(zp.item<double>()))};
  if (x.dtype() == DType::f32)
    return {clamp(add(round(div(x, scale)), zp.to(DType::f32)), lowest(out), highest(out)).to(out)};
  return {saturate(add(round(div(x, scale)).to(DType::f64), zp), out)};
}

std::vector<Tensor> dequantize_op(OpContext& c) {
  const Tensor& x = c.input(0);
  int64_t axis = c.attr_int("axis", 1);
  const Tensor& s = c.input(1);
  Tensor scale = per_axis(c, s.to(DType::f64), x.shape(), axis);
  Tensor v = x.to(DType::f64);
  if (c.has_input(2)) v = sub(v, per_axis(c, zero_point_of(c, x, c.input(2)).to(DType::f64), x.shape(), axis));
  return {mul(v, scale).to(s.dtype())};
}

// Computed in f32 like the spec's function body (Min, Max, Div, Round in FLOAT).
std::vector<Tensor> dynamic_quantize_op(OpContext& c) {
  Tensor x = c.input(0).to(DType::f32);
  float lo = std::min(0.0f, amin(x).item<float>()), hi = std::max(0.0f, amax(x).item<float>());
  float scale = (hi - lo) / 255.0f;
  float zp = std::clamp(std::nearbyint(0.0f - lo / scale), 0.0f, 255.0f);
  Tensor y = round(div(x, scalar(scale, DType::f32, x.device())));
  y = saturate(add(y.to(DType::f64), scalar(zp, DType::f64, x.device())), DType::u8);
  return {y, scalar(scale, DType::f32, x.device()), scalar(zp, DType::u8, x.device())};
}

// (a - a_zero_point) @ (b - b_zero_point) in i32 (MatMulInteger-10): a's zero point is per
// tensor or per row, b's per tensor or per column.
std::vector<Tensor> matmul_integer_op(OpContext& c) {
  Tensor a = c.input(0).to(DType::f64), b = c.input(1).to(DType::f64);
  if (c.has_input(2)) {
    Tensor z = c.input(2).to(DType::f64);
    a = sub(a, z.numel() == 1 ? z.reshape({}) : z.reshape({-1, 1}));
  }
  if (c.has_input(3)) {
    Tensor z = c.input(3).to(DType::f64);
    b = sub(b, z.numel() == 1 ? z.reshape({}) : z);
  }
  return {matmul(a, b).to(DType::i32)};
}

// Runs the table's Conv on (already shifted) f64 inputs with this node's attributes.
Tensor conv_f64(OpContext& c, const Tensor& x, const Tensor& w, const Tensor& bias) {
  OpContext inner(c.node(), c.opset(), std::vector<Tensor>{x, w, bias}, c.device(),
                  [](const Graph&, const std::vector<Value>&) -> std::vector<Value> { return {}; });
  return onnx_ops().at("Conv")(inner).at(0);
}

std::vector<Tensor> conv_integer_op(OpContext& c) {
  Tensor x = c.input(0).to(DType::f64), w = c.input(1).to(DType::f64);
  if (c.has_input(2)) x = sub(x, c.input(2).to(DType::f64).reshape({}));
  if (c.has_input(3)) w = sub(w, per_axis(c, c.input(3).to(DType::f64), w.shape(), 0));
  return {conv_f64(c, x, w, Tensor()).to(DType::i32)};
}

// y's zero point decides its type: UINT8 or INT8 (the spec's T3), else the node fails naming it.
DType quantized_output_type(const OpContext& c, const Tensor& y_zero_point) {
  if (y_zero_point.dtype() != DType::u8 && y_zero_point.dtype() != DType::i8)
    c.fail(std::string("y_zero_point must be UINT8 or INT8, got ") + dtype_name(y_zero_point.dtype()));
  return y_zero_point.dtype();
}

// a's and y's scale and zero point per tensor or per row ([M]), b's per tensor or per column ([N])
// (QLinearMatMul-10).
std::vector<Tensor> qlinear_matmul_op(OpContext& c) {
  auto row = [](const Tensor& p) { return (p.numel() == 1 ? p.reshape({}) : p.reshape({-1, 1})).to(DType::f64); };
  auto col = [](const Tensor& p) { return (p.numel() == 1 ? p.reshape({}) : p.reshape({-1})).to(DType::f64); };
  Tensor a = sub(c.input(0).to(DType::f64), row(zero_point_of(c, c.input(0), c.input(2))));
  Tensor b = sub(c.input(3).to(DType::f64), col(zero_point_of(c, c.input(3), c.input(5))));
  DType out = quantized_output_type(c, c.input(7));
  Tensor y = mul(matmul(a, b), div(mul(row(c.input(1)), col(c.input(4))), row(c.input(6))));
  return {saturate(add(round(y), row(c.input(7))), out)};
}

std::vector<Tensor> qlinear_conv_op(OpContext& c) {
  const DType out = quantized_output_type(c, c.input(7));
  Tensor x = sub(c.input(0).to(DType::f64), zero_point_of(c, c.input(0), c.input(2)).to(DType::f64).reshape({}));
  const Tensor& wq = c.input(3);
  Tensor w = sub(wq.to(DType::f64), per_axis(c, zero_point_of(c, wq, c.input(5)).to(DType::f64), wq.shape(), 0));
  Tensor bias = c.has_input(8) ? c.input(8).to(DType::f64) : Tensor();
  Tensor acc = conv_f64(c, x, w, bias);  // [N, M, ...]
  Tensor ws = c.input(4).to(DType::f64);
  Tensor scale = ws.numel() == 1 ? ws.reshape({}) : per_axis(c, ws, acc.shape(), 1);
  Tensor y = mul(acc, div(mul(scale, scalar(c.scalar_input(1), DType::f64, x.device())),
                          scalar(c.scalar_input(6), DType::f64, x.device())));
  return {saturate(add(round(y), c.input(7).to(DType::f64).reshape({})), out)};
}

// HannWindow, HammingWindow, BlackmanWindow (opset 17): generalized cosine windows
// w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size (periodic) or size - 1.
template <int Kind>
std::vector<Tensor> window_op(OpContext& c) {
  int64_t size = static_cast<int64_t>(c.scalar_input(0));
  if (size < 0) c.fail("size must be >= 0");
  bool periodic = c.attr_int("periodic", 1) != 0;
  DType dt = dtype_of_onnx(static_cast<int32_t>(c.attr_int("output_datatype", 1)), c.where() + " output_datatype");
  double a0 = Kind == 0 ? 0.5 : Kind == 1 ? 25.0 / 46.0 : 0.42, a1 = Kind == 0 ? 0.5 : Kind == 1 ? 21.0 / 46.0 : 0.5;
  double a2 = Kind == 2 ? 0.08 : 0.0;
  double n_den = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    double t = 2 * M_PI * static_cast<double>(n) / n_den;
    w[size_t(n)] = a0 - a1 * std::cos(t) + a2 * std::cos(2 * t);
  }
  return {from_doubles(w, {size}, dt, c.device())};
}

}  // namespace

void register_quant_ops(OpTable& t) {
  t["QuantizeLinear"] = quantize_op;
  t["DequantizeLinear"] = dequantize_op;
  t["DynamicQuantizeLinear"] = dynamic_quantize_op;
  t["MatMulInteger"] = matmul_integer_op;
  t["ConvInteger"] = conv_integer_op;
  t["QLinearMatMul"] = qlinear_matmul_op;
  t["QLinearConv"] = qlinear_conv_op;
  t["HannWindow"] = window_op<0>;
  t["HammingWindow"] = window_op<1>;
  t["BlackmanWindow"] = window_op<2>;
}

}  // namespace kiln::onnx
