// kiln.fused.QLinearConv / QLinearMatMul: a QOperator model's quantized layers on the int8
// kernels (engine/core/qops.h), put in place of QLinearConv / QLinearMatMul by FuseQLinear
// (rewrite_qlinear.cpp, which says the attributes and the weight). Inputs: x (UINT8 or INT8, as
// attribute x_signed says), w8 (INT8, w - w_zero_point), for the conv B (INT32 [M]) or none.
// Output: y of the type y_signed says,
//   y = saturate(rint(acc * (x_scale * w_scales[c] / y_scale) + y_zero_point))
// (ONNX QLinearConv / QLinearMatMul). The kernels take u8 x s8: an INT8 x is moved to u8 by
// + 128 (its zero point too), an INT8 y is computed as u8 with y_zero_point + 128, then - 128;
// both exact. With wide = 1, w8 holds w - w_zero_point in two halves (rewrite_qlinear.cpp, Note
// [Wide weights]) and the requantization runs here in f64.
#include "engine/core/ops.h"
#include "engine/core/qops.h"
#include "engine/onnx/op_context.h"
#include "engine/onnx/rewrite.h"

namespace kiln::onnx {
namespace {

// v + delta as `to` (values known to fit), through i32.
Tensor shifted(const Tensor& v, int64_t delta, DType to) {
  return add(v.to(DType::i32), Tensor::scalar(static_cast<double>(delta), DType::i32, v.device())).to(to);
}

struct QLinear {
  QuantizedParams q;  // in u8 terms
  std::vector<float> multipliers;  // x_scale * w_scale[c] / y_scale in f32, as the reference computes it
  int64_t y_zero_point = 0;  // in y's type
  bool y_signed = false, wide = false;
};

// The node's attributes, and x as u8.
QLinear read(OpContext& c, Tensor& x) {
  QLinear l;
  const bool x_signed = c.attr_int("x_signed", 0) != 0;
  if (x.dtype() != (x_signed ? DType::i8 : DType::u8))
    c.fail(std::string("x is ") + dtype_name(x.dtype()) + " but its zero point is " + (x_signed ? "INT8" : "UINT8"));
  int64_t x_zp = c.attr_int("x_zero_point", 0);
  if (x_signed) {
    x = shifted(x, 128, DType::u8);
    x_zp += 128;
  }
  l.y_signed = c.attr_int("y_signed", 0) != 0;
  l.y_zero_point = c.attr_int("y_zero_point", 0);
  l.wide = c.attr_int("wide", 0) != 0;
  const auto xs = static_cast<float>(c.attr_float("x_scale", 1)), ys = static_cast<float>(c.attr_float("y_scale", 1));
  const std::vector<double> ws = c.attr_floats("w_scales");
  l.q.in_scale = xs;
  l.q.in_zero_point = static_cast<int32_t>(x_zp);
  l.q.out_scale = ys;
  l.q.out_zero_point = static_cast<int32_t>(l.y_zero_point + (l.y_signed ? 128 : 0));
  for (double s : ws) {
    l.q.weight_scales.push_back(static_cast<float>(s));
    l.multipliers.push_back(xs * static_cast<float>(s) / ys);
  }
  if (l.wide) {  // the kernel gives the exact sums: unit scales, f32 out
    l.q.in_scale = 1;
    l.q.weight_scales.assign(2 * ws.size(), 1.0f);
  }
  return l;
}

// A u8 kernel output -> y's type.
Tensor narrow_output(const QLinear& l, const Tensor& y) { return l.y_signed ? shifted(y, -128, DType::i8) : y; }

// Wide: hi and lo sums (f32, exact) with channels along `dim` of size M -> y's type.
Tensor wide_output(const QLinear& l, const Tensor& hi, const Tensor& lo, const Tensor& bias, int64_t dim) {
  const auto M = static_cast<int64_t>(l.multipliers.size());
  Shape per_channel(static_cast<size_t>(hi.dim()), 1);
  per_channel[static_cast<size_t>(dim < 0 ? dim + hi.dim() : dim)] = M;
  Tensor acc = add(mul(hi.to(DType::f64), Tensor::scalar(2, DType::f64, hi.device())), lo.to(DType::f64));
  if (bias.defined()) acc = add(acc, bias.to(DType::f64).reshape(per_channel));
  const Tensor m = Tensor::from_vector(l.multipliers, {M}).to(hi.device()).to(DType::f64).reshape(per_channel);
  Tensor r = add(mul(acc, m), Tensor::scalar(static_cast<double>(l.y_zero_point), DType::f64, hi.device()));
  return l.y_signed ? clamp(round(r), -128, 127).to(DType::i8) : clamp(round(r), 0, 255).to(DType::u8);
}

std::vector<Tensor> qlinear_conv(OpContext& c) {
  Tensor x = c.input(0);
  const QLinear l = read(c, x);
  const Tensor& w = c.input(1);
  const Tensor b = c.optional_input(2);
  Conv2dParams p;
  const std::vector<int64_t> s = c.attr_ints("strides", {1, 1}), d = c.attr_ints("dilations", {1, 1}),
                             pads = c.attr_ints("pads", {0, 0, 0, 0});
  for (size_t i = 0; i < 2; ++i) p.stride[i] = s.at(i), p.dilation[i] = d.at(i), p.padding[i] = pads.at(i);
  p.groups = c.attr_int("group", 1);
  if (!l.wide) return {narrow_output(l, quant::quantized_conv2d(x, w, b, p, l.q, DType::u8))};
  // [N, group, 2, M / group, H, W]: each group's hi channels, then its lo channels
  const Tensor acc = quant::quantized_conv2d(x, w, Tensor(), p, l.q, DType::f32);
  const int64_t M = w.size(0) / 2;
  const Tensor v = acc.reshape({acc.size(0), p.groups, 2, M / p.groups, acc.size(2), acc.size(3)});
  const Shape out{acc.size(0), M, acc.size(2), acc.size(3)};
  return {wide_output(l, v.select(2, 0).reshape(out), v.select(2, 1).reshape(out), b, 1)};
}

std::vector<Tensor> qlinear_matmul(OpContext& c) {
  Tensor a = c.input(0);
  const QLinear l = read(c, a);
  const Tensor& w = c.input(1);  // [*batch, N (x2), K]
  const int64_t K = w.size(-1);
  const bool vector = a.dim() == 1;  // [K] @ [.., K, N] -> [.., N]
  if (vector) a = a.reshape({1, a.size(0)});
  if (a.size(-1) != K)
    c.fail("a " + shape_str(c.input(0).shape()) + " does not match b (the weight has " + std::to_string(K) + " rows)");
  const DType out_type = l.wide ? DType::f32 : DType::u8;
  Tensor y;
  if (w.dim() == 2) {
    y = quant::quantized_linear(a, w, Tensor(), l.q, out_type);
  } else {  // batched: broadcast the batch dims (numpy matmul), one kernel call per matrix
    const Shape ab(a.shape().begin(), a.shape().end() - 2), wb(w.shape().begin(), w.shape().end() - 2);
    Shape batch = broadcast_shapes(ab, wb, c.where().c_str());
    const int64_t rows = a.size(-2), n = w.size(-2);
    Shape as = batch, ws = batch;
    as.insert(as.end(), {rows, K});
    ws.insert(ws.end(), {n, K});
    const Tensor a3 = a.expand(as).contiguous().reshape({-1, rows, K});
    const Tensor w3 = w.expand(ws).contiguous().reshape({-1, n, K});
    std::vector<Tensor> parts;
    for (int64_t i = 0; i < a3.size(0); ++i)
      parts.push_back(quant::quantized_linear(a3.select(0, i), w3.select(0, i), Tensor(), l.q, out_type));
    batch.insert(batch.end(), {rows, n});
    y = stack(parts, 0).reshape(batch);
  }
  if (l.wide) {
    const int64_t N = y.size(-1) / 2;
    y = wide_output(l, y.narrow(-1, 0, N), y.narrow(-1, N, N), Tensor(), -1);
  } else {
    y = narrow_output(l, y);
  }
  if (vector) {  // drop the row dim
    Shape s = y.shape();
    s.erase(s.end() - 2);
    y = y.reshape(s);
  }
  return {y};
}

}  // namespace

void register_qlinear_fused_ops(OpTable& t) {
  const std::string d = std::string(kFusedDomain) + ".";
  t[d + "QLinearConv"] = qlinear_conv;
  t[d + "QLinearMatMul"] = qlinear_matmul;
}

}  // namespace kiln::onnx
