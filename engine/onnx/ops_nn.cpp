// ONNX convolution, pooling and normalization ops for 1-, 2- and 3-d spatial inputs
// [N, C, D?, H?, W]. The engine has 2-d kernels (conv2d, max_pool2d, avg_pool2d): 1-d runs
// as 2-d with H = 1, 3-d as a sum (or max) of 2-d ops over the kernel's depth taps.
// Padding (pads, auto_pad SAME_UPPER/SAME_LOWER/VALID, ceil_mode) is applied explicitly so
// the kernels always see "valid" windows; output sizes follow ONNX Operators.md (Conv, MaxPool).
#include <cmath>
#include <limits>

#include "engine/onnx/op_context.h"

namespace kiln::onnx {

namespace {

Tensor as(const Tensor& t, DType d) { return t.dtype() == d ? t : t.to(d); }

// Pads (or crops, when negative) the spatial dims 2.. of x with `value`.
Tensor pad_spatial(const Tensor& x, const std::vector<int64_t>& before, const std::vector<int64_t>& after, double value) {
  Tensor y = x;
  for (size_t i = 0; i < before.size(); ++i) {
    int64_t d = static_cast<int64_t>(i) + 2;
    int64_t b = std::min<int64_t>(before[i], 0), a = std::min<int64_t>(after[i], 0);
    if (b || a) y = y.slice(d, -b, y.size(d) + a);
  }
  Shape shape = y.shape();
  bool any = false;
  for (size_t i = 0; i < before.size(); ++i) {
    shape[i + 2] += std::max<int64_t>(before[i], 0) + std::max<int64_t>(after[i], 0);
    any |= before[i] > 0 || after[i] > 0;
  }
  if (!any) return y;
  Tensor out = Tensor::full(shape, value, y.dtype(), y.device());
  Tensor view = out;
  for (size_t i = 0; i < before.size(); ++i) {
    int64_t d = static_cast<int64_t>(i) + 2, b = std::max<int64_t>(before[i], 0);
    view = view.slice(d, b, b + y.size(d));
  }
  view.copy_(y);
  return out;
}

struct Window {
  std::vector<int64_t> kernel, strides, dilations, pad_begin, pad_end, out;
};

// Kernel geometry of a Conv/Pool node for input spatial sizes `in`.
Window window_of(OpContext& c, const std::vector<int64_t>& in, std::vector<int64_t> kernel, bool ceil_mode) {
  size_t r = in.size();
  Window w;
  w.kernel = kernel;
  w.strides = c.attr_ints("strides", std::vector<int64_t>(r, 1));
  w.dilations = c.attr_ints("dilations", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * r, 0));
  if (kernel.size() != r || w.strides.size() != r || w.dilations.size() != r || pads.size() != 2 * r)
    c.fail("kernel_shape, strides, dilations and pads do not fit " + std::to_string(r) + " spatial dimensions");
  std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  for (size_t i = 0; i < r; ++i) {
    int64_t k = (kernel[i] - 1) * w.dilations[i] + 1, s = w.strides[i];
    if (kernel[i] <= 0 || s <= 0 || w.dilations[i] <= 0) c.fail("kernel, stride and dilation must be positive");
    int64_t pb = pads[i], pe = pads[i + r], o;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      o = (in[i] + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (o - 1) * s + k - in[i]);
      pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    } else if (auto_pad == "VALID") {
      pb = pe = 0;
      o = (in[i] - k) / s + 1;
      if (in[i] < k) o = 0;
    } else if (auto_pad == "NOTSET") {
      int64_t span = in[i] + pb + pe - k;
      o = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
      // PyTorch/ONNX: the last window must start inside the input or the left padding
      if (ceil_mode && (o - 1) * s >= in[i] + pb) --o;
      if (span < 0) o = 0;
    } else {
      c.fail("unknown auto_pad '" + auto_pad + "'");
    }
    w.pad_begin.push_back(pb);
    w.pad_end.push_back(pe);
    w.out.push_back(o);
  }
  return w;
}

std::vector<int64_t> spatial(const Tensor& x) { return std::vector<int64_t>(x.shape().begin() + 2, x.shape().end()); }

// conv over explicitly padded x (no further padding), stride/dilation per dim, for 1-3 spatial dims.
Tensor conv_valid(const Tensor& x, const Tensor& w, const Tensor& b, const std::vector<int64_t>& strides,
                  const std::vector<int64_t>& dil, int64_t groups) {
  size_t r = strides.size();
  if (r == 1) {
    Conv2dParams p;
    p.stride[1] = strides[0];
    p.dilation[1] = dil[0];
    p.groups = groups;
    return conv2d(x.unsqueeze(2), w.unsqueeze(2), b, p).squeeze(2);
  }
  if (r == 2) {
    Conv2dParams p;
    for (int i = 0; i < 2; ++i) {
      p.stride[i] = strides[size_t(i)];
      p.dilation[i] = dil[size_t(i)];
    }
    p.groups = groups;
    return conv2d(x, w, b, p);
  }
  // 3-d: sum over depth taps of 2-d convolutions of strided depth slices.
  int64_t n = x.size(0), kd = w.size(2), sd = strides[0], dd = dil[0];
  int64_t od = (x.size(2) - (kd - 1) * dd - 1) / sd + 1;
  Conv2dParams p;
  for (int i = 0; i < 2; ++i) {
    p.stride[i] = strides[size_t(i) + 1];
    p.dilation[i] = dil[size_t(i) + 1];
  }
  p.groups = groups;
  Tensor acc;
  for (int64_t t = 0; t < kd; ++t) {
    Tensor xs = x.slice(2, t * dd, t * dd + (od - 1) * sd + 1, sd);  // [N, C, OD, H, W]
    Tensor x2 = xs.permute({0, 2, 1, 3, 4}).contiguous().reshape({n * od, x.size(1), x.size(3), x.size(4)});
    Tensor y = conv2d(x2, w.select(2, t).contiguous(), Tensor(), p);
    acc = acc.defined() ? add(acc, y) : y;
  }
  Tensor y = acc.reshape({n, od, acc.size(1), acc.size(2), acc.size(3)}).permute({0, 2, 1, 3, 4}).contiguous();
  if (b.defined()) y = add(y, b.reshape({1, -1, 1, 1, 1}));
  return y;
}

std::vector<Tensor> conv_op(OpContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& w = c.input(1);
  if (x.dim() < 3 || x.dim() > 5) c.fail("Kiln runs 1-, 2- and 3-d convolutions; got input " + shape_str(x.shape()));
  if (w.dim() != x.dim()) c.fail("weight " + shape_str(w.shape()) + " does not fit input " + shape_str(x.shape()));
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape", spatial(w));
  Window win = window_of(c, spatial(x), kernel, false);
  Tensor b = c.optional_input(2);
  if (b.defined()) b = as(b, x.dtype());
  // 1-d and 2-d with the same padding on both sides (the usual case): the kernel pads, no copy of x
  bool symmetric = x.dim() <= 4;
  for (size_t i = 0; i < win.pad_begin.size(); ++i)
    symmetric &= win.pad_begin[i] == win.pad_end[i] && win.pad_begin[i] >= 0;
  if (symmetric) {
    Conv2dParams p;
    size_t first = x.dim() == 3 ? 1 : 0;  // 1-d runs as [N, C, 1, W]
    for (size_t i = 0; i < win.strides.size(); ++i) {
      p.stride[first + i] = win.strides[i];
      p.dilation[first + i] = win.dilations[i];
      p.padding[first + i] = win.pad_begin[i];
    }
    p.groups = c.attr_int("group", 1);
    if (x.dim() == 3) return {conv2d(x.unsqueeze(2), w.unsqueeze(2), b, p).squeeze(2)};
    return {conv2d(x, w, b, p)};
  }
  Tensor xp = pad_spatial(x, win.pad_begin, win.pad_end, 0.0);
  return {conv_valid(xp, w, b, win.strides, win.dilations, c.attr_int("group", 1))};
}

// ConvTranspose: core conv_transpose2d where it fits, else a convolution of the stride-dilated
// input with the flipped, transposed kernel (the adjoint of Conv); output size
// s*(in-1) + output_padding + (k-1)*d + 1 - pads.
std::vector<Tensor> conv_transpose_op(OpContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& w = c.input(1);
  if (x.dim() < 3 || x.dim() > 5 || w.dim() != x.dim()) c.fail("input " + shape_str(x.shape()) + " and weight " + shape_str(w.shape()) + " do not fit a 1-3 d ConvTranspose");
  size_t r = static_cast<size_t>(x.dim() - 2);
  int64_t g = c.attr_int("group", 1);
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape", spatial(w));
  std::vector<int64_t> strides = c.attr_ints("strides", std::vector<int64_t>(r, 1));
  std::vector<int64_t> dil = c.attr_ints("dilations", std::vector<int64_t>(r, 1));
  std::vector<int64_t> outpad = c.attr_ints("output_padding", std::vector<int64_t>(r, 0));
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * r, 0));
  std::vector<int64_t> out_shape = c.attr_ints("output_shape");
  std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (strides.size() != r || dil.size() != r || outpad.size() != r || pads.size() != 2 * r) c.fail("attribute lengths do not fit the input's rank");
  if (out_shape.size() > r) out_shape.erase(out_shape.begin(), out_shape.begin() + static_cast<int64_t>(out_shape.size() - r));
  std::vector<int64_t> pb(r), pe(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t in = x.size(static_cast<int64_t>(i) + 2), k = (kernel[i] - 1) * dil[i] + 1;
    int64_t full = strides[i] * (in - 1) + outpad[i] + k;
    if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t target = out_shape.empty() ? in * strides[i] : out_shape[i];
      int64_t total = full - target;
      bool upper = auto_pad != "SAME_LOWER";
      pb[i] = upper ? total / 2 : total - total / 2;
      pe[i] = total - pb[i];
    } else if (auto_pad == "VALID") {
      pb[i] = pe[i] = 0;
    } else {
      pb[i] = pads[i];
      pe[i] = pads[i + r];
    }
  }
  Tensor b = c.optional_input(2);
  if (b.defined()) b = as(b, x.dtype());
  // 1-d and 2-d with the same padding on both sides and output_padding below the stride (what
  // PyTorch exports): core conv_transpose2d, the backend's conv2d input-gradient kernel.
  bool direct = r <= 2 && kernel == spatial(w);
  for (size_t i = 0; i < r; ++i) direct &= pb[i] == pe[i] && pb[i] >= 0 && outpad[i] >= 0 && outpad[i] < strides[i];
  if (direct) {
    ConvTranspose2dParams p;
    const size_t first = r == 1 ? 1 : 0;  // 1-d runs as [N, C, 1, W]
    for (size_t i = 0; i < r; ++i) {
      p.stride[first + i] = strides[i];
      p.dilation[first + i] = dil[i];
      p.padding[first + i] = pb[i];
      p.output_padding[first + i] = outpad[i];
    }
    p.groups = g;
    if (r == 1) return {conv_transpose2d(x.unsqueeze(2), w.unsqueeze(2), b, p).squeeze(2)};
    return {conv_transpose2d(x, w, b, p)};
  }
  // Otherwise: zero-insert the input by the strides
  Shape zs = x.shape();
  for (size_t i = 0; i < r; ++i) zs[i + 2] = (zs[i + 2] - 1) * strides[i] + 1;
  Tensor xz = Tensor::zeros(zs, x.dtype(), x.device());
  Tensor view = xz;
  for (size_t i = 0; i < r; ++i) view = view.slice(static_cast<int64_t>(i) + 2, 0, zs[i + 2], strides[i]);
  view.copy_(x);
  // weight [C, M/g, k...] -> [M, C/g, k...], flipped
  int64_t cin = w.size(0), mg = w.size(1);
  Shape ws = w.shape();
  Shape grouped{g, cin / g, mg};
  grouped.insert(grouped.end(), ws.begin() + 2, ws.end());
  std::vector<int64_t> perm{0, 2, 1};
  for (size_t i = 0; i < r; ++i) perm.push_back(static_cast<int64_t>(i) + 3);
  Shape wt_shape{g * mg, cin / g};
  wt_shape.insert(wt_shape.end(), ws.begin() + 2, ws.end());
  Tensor wt = w.reshape(grouped).permute(perm).contiguous().reshape(wt_shape);
  for (size_t i = 0; i < r; ++i) wt = flip(wt, static_cast<int64_t>(i) + 2);
  std::vector<int64_t> before(r), after(r), ones(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t k = (kernel[i] - 1) * dil[i];
    before[i] = k - pb[i];
    after[i] = k - pe[i] + outpad[i];
  }
  Tensor xp = pad_spatial(xz, before, after, 0.0);
  return {conv_valid(xp, wt, b, ones, dil, g)};
}

// Max (or mean) over "valid" windows of x [N, C, spatial...] (already padded).
Tensor pool_valid(const Tensor& x, const Window& w, bool is_max) {
  size_t r = w.kernel.size();
  auto params2 = [&](size_t off) {
    Pool2dParams p;
    for (size_t i = 0; i < 2; ++i) {
      p.kernel[i] = w.kernel[off + i];
      p.stride[i] = w.strides[off + i];
      p.dilation[i] = w.dilations[off + i];
    }
    return p;
  };
  auto pool2 = [&](const Tensor& t, const Pool2dParams& p) { return is_max ? max_pool2d(t, p) : avg_pool2d(t, p); };
  if (r == 1) {
    Pool2dParams p;
    p.kernel[1] = w.kernel[0];
    p.stride[1] = w.strides[0];
    p.dilation[1] = w.dilations[0];
    return pool2(x.unsqueeze(2), p).squeeze(2);
  }
  if (r == 2) return pool2(x, params2(0));
  int64_t n = x.size(0), ch = x.size(1), d = x.size(2), kd = w.kernel[0], sd = w.strides[0], dd = w.dilations[0];
  int64_t od = w.out[0];
  Tensor x2 = x.permute({0, 2, 1, 3, 4}).contiguous().reshape({n * d, ch, x.size(3), x.size(4)});
  Tensor y2 = pool2(x2, params2(1));
  Tensor y = y2.reshape({n, d, ch, y2.size(2), y2.size(3)});
  Tensor acc;
  for (int64_t t = 0; t < kd; ++t) {
    Tensor s = y.slice(1, t * dd, t * dd + (od - 1) * sd + 1, sd);
    acc = !acc.defined() ? s : is_max ? maximum(acc, s) : add(acc, s);
  }
  if (!is_max) acc = div(acc, Tensor::scalar(static_cast<double>(kd), acc.dtype(), acc.device()));
  return acc.permute({0, 2, 1, 3, 4}).contiguous();
}

// Extra end padding so that ceil-mode windows fit.
void extend_for_ceil(Window& w, const std::vector<int64_t>& in, std::vector<int64_t>& extra) {
  extra.assign(in.size(), 0);
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t need = (w.out[i] - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1;
    extra[i] = std::max<int64_t>(0, need - (in[i] + w.pad_begin[i] + w.pad_end[i]));
  }
}

// MaxPool with its Indices output (host fallback, 2-d): the flat index of each maximum in
// the input [N, C, H, W], row-major (storage_order 0) or column-major within the plane (1).
std::vector<Tensor> host_max_pool_with_indices(OpContext& c, const Tensor& x, const Window& w) {
  if (x.dim() != 4) c.fail("the Indices output is supported for 2-d pooling only, got " + shape_str(x.shape()));
  bool column_major = c.attr_int("storage_order", 0) != 0;
  int64_t n = x.size(0), ch = x.size(1), h = x.size(2), wd = x.size(3), oh = w.out[0], ow = w.out[1];
  std::vector<double> v = host_doubles(x), out(static_cast<size_t>(n * ch * oh * ow));
  std::vector<int64_t> idx(out.size());
  for (int64_t p = 0; p < n * ch; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double best = -std::numeric_limits<double>::infinity();
        int64_t at = -1;
        for (int64_t ki = 0; ki < w.kernel[0]; ++ki)
          for (int64_t kj = 0; kj < w.kernel[1]; ++kj) {
            int64_t y = i * w.strides[0] + ki * w.dilations[0] - w.pad_begin[0];
            int64_t xx = j * w.strides[1] + kj * w.dilations[1] - w.pad_begin[1];
            if (y < 0 || y >= h || xx < 0 || xx >= wd) continue;
            double e = v[size_t((p * h + y) * wd + xx)];
            if (at < 0 || e > best) {
              best = e;
              at = p * h * wd + (column_major ? xx * h + y : y * wd + xx);
            }
          }
        size_t o = size_t((p * oh + i) * ow + j);
        out[o] = best;
        idx[o] = at;
      }
  return {from_doubles(out, {n, ch, oh, ow}, x.dtype(), x.device()), Tensor::from_vector(idx, {n, ch, oh, ow}, x.device())};
}

template <bool Max>
std::vector<Tensor> pool_op(OpContext& c) {
  const Tensor& x = c.input(0);
  if (x.dim() < 3 || x.dim() > 5) c.fail("Kiln pools 1-, 2- and 3-d inputs; got " + shape_str(x.shape()));
  if (Max && c.node().outputs.size() > 1 && !c.node().outputs[1].empty())
    return host_max_pool_with_indices(c, x, window_of(c, spatial(x), c.attr_ints("kernel_shape"), c.attr_int("ceil_mode", 0) != 0));
  if (!Max && c.has_attr("dilations")) {
    for (int64_t d : c.attr_ints("dilations"))
      if (d != 1) c.fail("dilated AveragePool is not supported");
  }
  std::vector<int64_t> in = spatial(x);
  Window w = window_of(c, in, c.attr_ints("kernel_shape"), c.attr_int("ceil_mode", 0) != 0);
  std::vector<int64_t> extra;
  extend_for_ceil(w, in, extra);
  std::vector<int64_t> end(in.size());
  for (size_t i = 0; i < in.size(); ++i) end[i] = w.pad_end[i] + extra[i];
  Tensor xf = is_floating(x.dtype()) ? x : x.to(DType::f32);
  if (Max && x.dim() == 4) {
    // The kernel pads itself (max over the window's elements inside the input, the same as
    // -inf padding) when both sides pad alike by at most half the window (ResNet's 3x3 stride-2
    // pool): no padded copy of x.
    Pool2dParams p;
    bool direct = true;
    for (size_t i = 0; i < 2; ++i) {
      p.kernel[i] = w.kernel[i];
      p.stride[i] = w.strides[i];
      p.dilation[i] = w.dilations[i];
      p.padding[i] = w.pad_begin[i];
      direct &= w.pad_begin[i] == w.pad_end[i] && w.pad_begin[i] >= 0 && extra[i] == 0 &&
                2 * w.pad_begin[i] <= (w.kernel[i] - 1) * w.dilations[i] + 1;
    }
    if (direct) return {as(max_pool2d(xf, p), x.dtype())};
  }
  if (Max) {
    Tensor xp = pad_spatial(xf, w.pad_begin, end, -std::numeric_limits<double>::infinity());
    return {as(pool_valid(xp, w, true), x.dtype())};
  }
  // mean over the window's elements that count: inside the input, plus the pads when
  // count_include_pad = 1; the ceil-mode overhang never counts.
  bool include_pad = c.attr_int("count_include_pad", 0) != 0;
  Tensor xp = pad_spatial(xf, w.pad_begin, end, 0.0);
  Shape ms{1, 1};
  ms.insert(ms.end(), in.begin(), in.end());
  Tensor mask = Tensor::ones(ms, xf.dtype(), x.device());
  if (include_pad) {
    mask = pad_spatial(mask, w.pad_begin, w.pad_end, 1.0);
    mask = pad_spatial(mask, std::vector<int64_t>(in.size(), 0), extra, 0.0);
  } else {
    mask = pad_spatial(mask, w.pad_begin, end, 0.0);
  }
  return {as(div(pool_valid(xp, w, false), pool_valid(mask, w, false)), x.dtype())};
}

std::vector<Tensor> lp_pool_op(OpContext& c) {
  const Tensor& x = c.input(0);
  double p = static_cast<double>(c.attr_int("p", 2));
  std::vector<int64_t> in = spatial(x);
  Window w = window_of(c, in, c.attr_ints("kernel_shape"), false);
  Tensor xp = pad_spatial(pow(abs(x), p), w.pad_begin, w.pad_end, 0.0);
  double k = 1;
  for (int64_t v : w.kernel) k *= static_cast<double>(v);
  Tensor s = mul(pool_valid(xp, w, false), Tensor::scalar(k, x.dtype(), x.device()));
  return {pow(s, 1.0 / p)};
}

std::vector<int64_t> spatial_axes(const Tensor& x) {
  std::vector<int64_t> a;
  for (int64_t i = 2; i < x.dim(); ++i) a.push_back(i);
  return a;
}

// Per-channel parameters [C] shaped to broadcast along dim 1 of a rank-r tensor; ShapeError
// when the input has no channel dimension (rank < 2: it must be [N, C, ...]).
Tensor channel(const Tensor& p, int64_t rank, DType dt) {
  KILN_CHECK(rank >= 2, ShapeError, "the input must be [N, C, ...] (rank 2 or more), got rank ", rank);
  Shape s(static_cast<size_t>(rank), 1);
  s[1] = p.numel();
  return as(p, dt).reshape(s);
}

std::vector<Tensor> batch_norm_op(OpContext& c) {
  const Tensor& x = c.input(0);
  double eps = c.attr_float("epsilon", 1e-5), momentum = c.attr_float("momentum", 0.9);
  bool training = c.attr_int("training_mode", 0) != 0;
  if (c.opset() < 14 && c.node().outputs.size() > 1) training = true;  // BatchNormalization-9 with stats outputs
  DType dt = x.dtype();
  int64_t r = x.dim();
  Tensor scale = channel(c.input(1), r, dt), bias = channel(c.input(2), r, dt);
  Tensor mean_in = c.input(3), var_in = c.input(4);
  if (!training) {
    Tensor y = div(sub(x, channel(mean_in, r, dt)),
                   sqrt(add(channel(var_in, r, dt), Tensor::scalar(eps, dt, x.device()))));
    return {add(mul(y, scale), bias)};
  }
  std::vector<int64_t> axes{0};
  for (int64_t i = 2; i < r; ++i) axes.push_back(i);
  Tensor m = mean(x, axes), v = var(x, axes, 0);
  Tensor y = div(sub(x, channel(m, r, dt)), sqrt(add(channel(v, r, dt), Tensor::scalar(eps, dt, x.device()))));
  Tensor mom = Tensor::scalar(momentum, mean_in.dtype(), x.device());
  Tensor one_m = Tensor::scalar(1 - momentum, mean_in.dtype(), x.device());
  Tensor rm = add(mul(mean_in, mom), mul(as(m, mean_in.dtype()), one_m));
  Tensor rv = add(mul(var_in, mom), mul(as(v, var_in.dtype()), one_m));
  return {add(mul(y, scale), bias), rm, rv};
}

std::vector<Tensor> instance_norm_op(OpContext& c) {
  const Tensor& x = c.input(0);
  double eps = c.attr_float("epsilon", 1e-5);
  std::vector<int64_t> axes = spatial_axes(x);
  Tensor m = mean(x, axes, true), v = var(x, axes, 0, true);
  Tensor y = div(sub(x, m), sqrt(add(v, Tensor::scalar(eps, x.dtype(), x.device()))));
  return {add(mul(y, channel(c.input(1), x.dim(), x.dtype())), channel(c.input(2), x.dim(), x.dtype()))};
}

// LayerNormalization-17: normalizes over dims axis..end; outputs Y, Mean, InvStdDev
// (the statistics keep the reduced dims as 1), computed in f32 at least (stash_type 1).
std::vector<Tensor> layer_norm_op(OpContext& c) {
  const Tensor& x = c.input(0);
  int64_t axis = wrap_axis(c, c.attr_int("axis", -1), x.dim());
  double eps = c.attr_float("epsilon", 1e-5);
  std::vector<int64_t> axes;
  int64_t d = 1;  // elements normalized together
  for (int64_t i = axis; i < x.dim(); ++i) {
    axes.push_back(i);
    d *= x.size(i);
  }
  // Only Y read (as exported by PyTorch): x viewed as [1, R, D], R rows of the D normalized
  // elements, is the input of a training-mode batch norm with R channels, whose per-channel
  // mean and biased variance are the rows' statistics: one kernel where the backend has it,
  // instead of the decomposition below.
  const auto& outs = c.node().outputs;
  const bool y_only = outs.size() < 2 || (outs[1].empty() && (outs.size() < 3 || outs[2].empty()));
  Tensor y, m, inv;
  if (y_only && x.dtype() == DType::f32 && x.numel() > 0) {
    const Tensor rows = x.reshape({1, x.numel() / d, d});
    if (batch_norm_fused_available(rows, Tensor(), Tensor(), Tensor(), Tensor()))
      y = batch_norm_training(rows, Tensor(), Tensor(), Tensor(), Tensor(), 0.0, eps).reshape(x.shape());
  }
  if (!y.defined()) {
    DType st = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
    Tensor xs = as(x, st);
    m = mean(xs, axes, true);
    inv = rsqrt(add(var(xs, axes, 0, true), Tensor::scalar(eps, st, x.device())));
    y = as(mul(sub(xs, m), inv), x.dtype());
  }
  y = mul(y, as(c.input(1), x.dtype()));
  if (c.has_input(2)) y = add(y, as(c.input(2), x.dtype()));
  if (!m.defined()) return {y};
  return {y, m, inv};
}

std::vector<Tensor> mvn_op(OpContext& c) {
  const Tensor& x = c.input(0);
  std::vector<int64_t> axes = c.attr_ints("axes", {0, 2, 3});
  for (auto& a : axes) a = wrap_axis(c, a, x.dim());
  Tensor m = mean(x, axes, true);
  Tensor v = sub(mean(mul(x, x), axes, true), mul(m, m));
  return {div(sub(x, m), add(sqrt(v), Tensor::scalar(1e-9, x.dtype(), x.device())))};
}

// LRN: y = x / (bias + alpha / size * sum of x^2 over the channel window)^beta.
std::vector<Tensor> lrn_op(OpContext& c) {
  const Tensor& x = c.input(0);
  int64_t size = c.attr_int("size");
  double alpha = c.attr_float("alpha", 1e-4), beta = c.attr_float("beta", 0.75), bias = c.attr_float("bias", 1.0);
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo, ch = x.size(1);
  Tensor sq = mul(x, x);
  Shape ps = sq.shape();
  ps[1] += lo + hi;
  Tensor padded = Tensor::zeros(ps, x.dtype(), x.device());
  padded.slice(1, lo, lo + ch).copy_(sq);
  Tensor acc;
  for (int64_t k = 0; k < size; ++k) {
    Tensor s = padded.slice(1, k, k + ch);
    acc = acc.defined() ? add(acc, s) : s.contiguous();
  }
  Tensor d = add(mul(acc, Tensor::scalar(alpha / static_cast<double>(size), x.dtype(), x.device())),
                 Tensor::scalar(bias, x.dtype(), x.device()));
  return {div(x, pow(d, beta))};
}

}  // namespace

void register_nn_ops(OpTable& t) {
  t["Conv"] = conv_op;
  t["ConvTranspose"] = conv_transpose_op;
  t["MaxPool"] = pool_op<true>;
  t["AveragePool"] = pool_op<false>;
  t["LpPool"] = lp_pool_op;
  t["GlobalAveragePool"] = [](OpContext& c) -> std::vector<Tensor> {
    const Tensor& x = c.input(0);
    return {mean(x, spatial_axes(x), true)};
  };
  t["GlobalMaxPool"] = [](OpContext& c) -> std::vector<Tensor> {
    const Tensor& x = c.input(0);
    return {amax(x, spatial_axes(x), true)};
  };
  t["BatchNormalization"] = batch_norm_op;
  t["InstanceNormalization"] = instance_norm_op;
  t["LayerNormalization"] = layer_norm_op;
  t["MeanVarianceNormalization"] = mvn_op;
  t["LRN"] = lrn_op;
}

}  // namespace kiln::onnx
