// Resize (opsets 10, 11, 13, 18, 19) and Upsample (7, 9): separable nearest / linear / cubic
// interpolation, with Resize-18's antialias for linear and cubic. The taps (source index and
// weight of every output position, per axis) are computed on the host from ONNX's coordinate_transformation_mode formulas (Operators.md,
// Resize); they are applied on the device as index_select and weighted sums, one axis at a time.
#include <algorithm>
#include <cmath>

#include "engine/onnx/op_context.h"

namespace kiln::onnx {

namespace {

struct ResizeSpec {
  std::string mode = "nearest", coord = "half_pixel", nearest = "round_prefer_floor";
  double cubic_a = -0.75, extrapolation = 0.0;
  bool exclude_outside = false;
  bool antialias = false;  // Resize-18: when shrinking, the filter widened by 1 / scale
};

// Note [Resize antialias]: Resize-18's antialias (ONNX's reference, onnx/reference/ops/op_resize.py
// _linear_coeffs_antialias / _cubic_coeffs_antialias; PIL's resample and onnxruntime's
// upsample_antialias compute the same) evaluates the filter at (i - x) * min(scale, 1) for every
// source index i within its widened support around the source coordinate x, and divides by the
// weights' sum. Taps outside [0, in) read the edge value, or are left out (exclude_outside = 1).
double antialias_filter(const ResizeSpec& s, double t) {
  t = std::abs(t);
  if (s.mode == "linear") return std::max(0.0, 1.0 - t);
  const double A = s.cubic_a;
  if (t < 1) return ((A + 2) * t - (A + 3)) * t * t + 1;
  if (t < 2) return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
  return 0;
}

// x: output coordinate; `out` is the output length as ONNX's reference uses it: scale * in
// (not rounded), which for given sizes equals the size.
double source_coord(const ResizeSpec& s, double x, double scale, int64_t in, double out, double roi_start,
                    double roi_end) {
  const std::string& m = s.coord;
  if (m == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (m == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (m == "align_corners") return out == 1 ? 0.0 : x * static_cast<double>(in - 1) / (out - 1);
  if (m == "asymmetric") return x / scale;
  if (m == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (m == "tf_crop_and_resize")
    return out > 1 ? roi_start * static_cast<double>(in - 1) +
                         x * (roi_end - roi_start) * static_cast<double>(in - 1) / (out - 1)
                   : 0.5 * (roi_start + roi_end) * static_cast<double>(in - 1);
  if (m == "half_pixel_symmetric") {
    double adj = static_cast<double>(out) / (scale * static_cast<double>(in));
    double center = static_cast<double>(in) / 2, offset = center * (1 - adj);
    return offset + (x + 0.5) / scale - 0.5;
  }
  throw ValueError("unknown coordinate_transformation_mode '" + m + "'");
}

// Applies one axis: out[..., o, ...] = sum_t w[o][t] * x[..., idx[o][t], ...].
Tensor apply_axis(const Tensor& x, int64_t axis, int64_t in, int64_t out, double scale, const ResizeSpec& s,
                  double roi_start, double roi_end) {
  // taps[o]: (source index, weight) pairs of output position o.
  std::vector<std::vector<std::pair<int64_t, double>>> taps(static_cast<size_t>(out));
  std::vector<uint8_t> outside(static_cast<size_t>(out), 0);
  auto clampi = [&](int64_t i) { return std::min<int64_t>(std::max<int64_t>(i, 0), in - 1); };
  for (int64_t o = 0; o < out; ++o) {
    double xs = source_coord(s, static_cast<double>(o), scale, in, scale * static_cast<double>(in), roi_start, roi_end);
    if (s.coord == "tf_crop_and_resize" && (xs < 0 || xs > static_cast<double>(in - 1))) outside[size_t(o)] = 1;
    auto& t = taps[size_t(o)];
    if (s.mode == "nearest") {
      double f = std::floor(xs), frac = xs - f;
      int64_t i;
      if (s.nearest == "floor") i = static_cast<int64_t>(f);
      else if (s.nearest == "ceil") i = static_cast<int64_t>(std::ceil(xs));
      else if (s.nearest == "round_prefer_ceil") i = static_cast<int64_t>(frac >= 0.5 ? f + 1 : f);
      else if (s.nearest == "round_prefer_floor") i = static_cast<int64_t>(frac > 0.5 ? f + 1 : f);
      else throw ValueError("unknown nearest_mode '" + s.nearest + "'");
      t.push_back({clampi(i), 1.0});
    } else if (s.mode != "linear" && s.mode != "cubic") {
      throw ValueError("unknown mode '" + s.mode + "' (nearest, linear, cubic)");
    } else if (s.antialias && scale < 1) {  // Note [Resize antialias]
      const double support = (s.mode == "linear" ? 1.0 : 2.0) / scale;
      double total = 0;
      for (auto i = static_cast<int64_t>(std::floor(xs - support)); i <= static_cast<int64_t>(std::ceil(xs + support)); ++i) {
        double w = antialias_filter(s, (static_cast<double>(i) - xs) * scale);
        if (w == 0 || (s.exclude_outside && (i < 0 || i >= in))) continue;
        t.push_back({clampi(i), w});
        total += w;
      }
      for (auto& [i, w] : t) w = total != 0 ? w / total : 0;
    } else if (s.mode == "linear") {
      double xc = std::min(std::max(xs, 0.0), static_cast<double>(in - 1));
      double f = std::floor(xc), u = xc - f;
      t.push_back({clampi(static_cast<int64_t>(f)), 1 - u});
      t.push_back({clampi(static_cast<int64_t>(f) + 1), u});
    } else {
      double f = std::floor(xs), u = xs - f, A = s.cubic_a;
      double c[4] = {((A * (u + 1) - 5 * A) * (u + 1) + 8 * A) * (u + 1) - 4 * A,
                     ((A + 2) * u - (A + 3)) * u * u + 1,
                     ((A + 2) * (1 - u) - (A + 3)) * (1 - u) * (1 - u) + 1,
                     ((A * (2 - u) - 5 * A) * (2 - u) + 8 * A) * (2 - u) - 4 * A};
      double total = 0;
      for (int k = 0; k < 4; ++k) {
        int64_t i = static_cast<int64_t>(f) - 1 + k;
        if (s.exclude_outside && (i < 0 || i >= in)) c[k] = 0;
        total += c[k];
      }
      for (int k = 0; k < 4; ++k)
        t.push_back({clampi(static_cast<int64_t>(f) - 1 + k), s.exclude_outside && total != 0 ? c[k] / total : c[k]});
    }
  }
  size_t width = 0;
  for (const auto& t : taps) width = std::max(width, t.size());
  std::vector<std::vector<int64_t>> idx(width, std::vector<int64_t>(static_cast<size_t>(out), 0));
  std::vector<std::vector<double>> w(width, std::vector<double>(static_cast<size_t>(out), 0.0));
  for (size_t o = 0; o < taps.size(); ++o)
    for (size_t k = 0; k < taps[o].size(); ++k) idx[k][o] = taps[o][k].first, w[k][o] = taps[o][k].second;
  Shape ws(static_cast<size_t>(x.dim()), 1);
  ws[size_t(axis)] = out;
  Tensor acc;
  for (size_t k = 0; k < width; ++k) {
    Tensor g = index_select(x, axis, ints_tensor(idx[k], x.device()));
    if (s.mode != "nearest") g = mul(g, from_doubles(w[k], ws, x.dtype(), x.device()));
    acc = acc.defined() ? add(acc, g) : g;
  }
  bool any_out = false;
  for (auto b : outside) any_out |= b != 0;
  if (any_out) {
    Tensor m = Tensor::from_host(outside.data(), outside.size(), DType::bool_, ws, x.device());
    acc = where(m, Tensor::scalar(s.extrapolation, acc.dtype(), acc.device()), acc);
  }
  return acc;
}

Tensor resize(OpContext& c, const Tensor& x, std::vector<double> scales, std::vector<int64_t> sizes,
              std::vector<double> roi, const ResizeSpec& s) {
  int64_t r = x.dim();
  std::vector<int64_t> axes = c.attr_ints("axes");
  if (!axes.empty()) {  // Resize-18: scales/sizes/roi for the listed axes only
    std::vector<double> fs(size_t(r), 1.0);
    std::vector<int64_t> fz(x.shape().begin(), x.shape().end());
    std::vector<double> froi(size_t(2 * r));
    for (int64_t i = 0; i < r; ++i) froi[size_t(i)] = 0, froi[size_t(i + r)] = 1;
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = wrap_axis(c, axes[i], r);
      if (!scales.empty()) fs[size_t(a)] = scales.at(i);
      if (!sizes.empty()) fz[size_t(a)] = sizes.at(i);
      if (!roi.empty()) froi[size_t(a)] = roi.at(i), froi[size_t(a + r)] = roi.at(i + axes.size());
    }
    if (!scales.empty()) scales = fs;
    if (!sizes.empty()) sizes = fz;
    if (!roi.empty()) roi = froi;
  }
  if (sizes.empty() && static_cast<int64_t>(scales.size()) != r) c.fail("scales has " + std::to_string(scales.size()) + " values for rank " + std::to_string(r));
  if (!sizes.empty() && static_cast<int64_t>(sizes.size()) != r) c.fail("sizes has " + std::to_string(sizes.size()) + " values for rank " + std::to_string(r));
  if (!sizes.empty()) {
    std::string policy = c.attr_string("keep_aspect_ratio_policy", "stretch");
    scales.assign(size_t(r), 1.0);
    if (policy != "stretch") {
      double sc = policy == "not_larger" ? 1e300 : 0.0;
      for (int64_t i = 0; i < r; ++i) {
        if (sizes[size_t(i)] == x.size(i) && axes.empty()) continue;
        if (!axes.empty() && std::find(axes.begin(), axes.end(), i) == axes.end()) continue;  // not resized
        double v = static_cast<double>(sizes[size_t(i)]) / static_cast<double>(x.size(i));
        sc = policy == "not_larger" ? std::min(sc, v) : std::max(sc, v);
      }
      for (int64_t i = 0; i < r; ++i) {
        bool listed = axes.empty() || std::find(axes.begin(), axes.end(), i) != axes.end();
        if (!listed) continue;
        scales[size_t(i)] = sc;
        sizes[size_t(i)] = static_cast<int64_t>(std::round(sc * static_cast<double>(x.size(i))));
      }
    } else {
      for (int64_t i = 0; i < r; ++i) scales[size_t(i)] = static_cast<double>(sizes[size_t(i)]) / static_cast<double>(x.size(i));
    }
  } else {
    for (int64_t i = 0; i < r; ++i) sizes.push_back(static_cast<int64_t>(std::floor(static_cast<double>(x.size(i)) * scales[size_t(i)])));
  }
  DType dt = x.dtype();
  Tensor y = is_floating(dt) ? x : x.to(DType::f32);
  for (int64_t i = 0; i < r; ++i) {
    bool crop = s.coord == "tf_crop_and_resize";
    if (sizes[size_t(i)] == x.size(i) && scales[size_t(i)] == 1.0 && !crop) continue;
    double rs = roi.empty() ? 0.0 : roi[size_t(i)], re = roi.empty() ? 1.0 : roi[size_t(i + r)];
    y = apply_axis(y, i, x.size(i), sizes[size_t(i)], scales[size_t(i)], s, rs, re);
  }
  return is_floating(dt) ? y : (s.mode == "nearest" ? y.to(dt) : round(y).to(dt));
}

std::vector<double> doubles_input(OpContext& c, size_t i) {
  return c.has_input(i) ? host_doubles(c.input(i)) : std::vector<double>{};
}

std::vector<Tensor> resize_op(OpContext& c) {
  ResizeSpec s;
  s.mode = c.attr_string("mode", "nearest");
  if (c.opset() < 11) {
    s.coord = "asymmetric";
    s.nearest = "floor";
    return {resize(c, c.input(0), doubles_input(c, 1), {}, {}, s)};
  }
  s.coord = c.attr_string("coordinate_transformation_mode", "half_pixel");
  s.nearest = c.attr_string("nearest_mode", "round_prefer_floor");
  s.cubic_a = c.attr_float("cubic_coeff_a", -0.75);
  s.exclude_outside = c.attr_int("exclude_outside", 0) != 0;
  s.extrapolation = c.attr_float("extrapolation_value", 0.0);
  s.antialias = c.opset() >= 18 && c.attr_int("antialias", 0) != 0;
  std::vector<double> roi = doubles_input(c, 1), scales = doubles_input(c, 2);
  std::vector<int64_t> sizes;
  if (c.has_input(3) && c.input(3).numel()) sizes = c.ints_input(3);
  if (!sizes.empty()) scales.clear();
  if (scales.empty() && sizes.empty()) c.fail("needs scales or sizes");
  return {resize(c, c.input(0), scales, sizes, roi, s)};
}

std::vector<Tensor> upsample_op(OpContext& c) {
  ResizeSpec s;
  s.mode = c.attr_string("mode", "nearest");
  s.coord = "asymmetric";
  s.nearest = "floor";
  std::vector<double> scales = c.opset() >= 9 ? doubles_input(c, 1) : c.attr_floats("scales");
  return {resize(c, c.input(0), scales, {}, {}, s)};
}

}  // namespace

void register_resize_ops(OpTable& t) {
  t["Resize"] = resize_op;
  t["Upsample"] = upsample_op;
}

}  // namespace kiln::onnx
