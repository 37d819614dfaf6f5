// ONNX ops that move data without arithmetic: reshaping, slicing, joining, gathering,
// padding and the shape-producing ops (Shape, Size, Range, Constant, ConstantOfShape).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/onnx/op_context.h"

namespace kiln::onnx {

namespace {

// Axes from an attribute (before `input_since`) or from input `index` (from then on).
std::vector<int64_t> axes_of(OpContext& c, int64_t input_since, size_t index) {
  if (c.opset() >= input_since) return c.has_input(index) ? c.ints_input(index) : std::vector<int64_t>{};
  return c.attr_ints("axes");
}

std::vector<Tensor> reshape_op(OpContext& c) {
  const Tensor& x = c.input(0);
  std::vector<int64_t> shape = c.opset() >= 5 ? c.ints_input(1) : c.attr_ints("shape");
  bool allow_zero = c.attr_int("allowzero", 0) != 0;
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allow_zero) {
      if (static_cast<int64_t>(i) >= x.dim()) c.fail("shape has 0 at " + std::to_string(i) + " beyond the input's rank");
      shape[i] = x.size(static_cast<int64_t>(i));
    }
    if (shape[i] == -1) {
      if (infer >= 0) c.fail("shape " + shape_str(shape) + " has more than one -1");
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      c.fail("shape " + shape_str(shape) + " has a negative size");
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known) c.fail("cannot reshape " + shape_str(x.shape()) + " to " + shape_str(shape));
    shape[static_cast<size_t>(infer)] = x.numel() / known;
  }
  if (numel(shape) != x.numel()) c.fail("cannot reshape " + shape_str(x.shape()) + " to " + shape_str(shape));
  return {x.reshape(shape)};
}

std::vector<Tensor> flatten_op(OpContext& c) {
  const Tensor& x = c.input(0);
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += x.dim();
  if (axis < 0 || axis > x.dim()) c.fail("axis out of range for shape " + shape_str(x.shape()));
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.size(i);
  int64_t inner = 1;
  for (int64_t i = axis; i < x.dim(); ++i) inner *= x.size(i);
  return {x.reshape({outer, inner})};
}

std::vector<Tensor> transpose_op(OpContext& c) {
  const Tensor& x = c.input(0);
  std::vector<int64_t> perm = c.attr_ints("perm");
  if (perm.empty())
    for (int64_t i = x.dim() - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != x.dim()) c.fail("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(x.dim()));
  return {x.permute(perm).contiguous()};
}

std::vector<Tensor> squeeze_op(OpContext& c) {
  const Tensor& x = c.input(0);
  std::vector<int64_t> axes = axes_of(c, 13, 1);
  Shape out;
  std::vector<bool> drop(static_cast<size_t>(x.dim()), false);
  for (int64_t a : axes) {
    a = wrap_axis(c, a, x.dim());
    if (x.size(a) != 1) c.fail("cannot squeeze axis " + std::to_string(a) + " of shape " + shape_str(x.shape()));
    drop[static_cast<size_t>(a)] = true;
  }
  for (int64_t i = 0; i < x.dim(); ++i)
    if (!(axes.empty() ? x.size(i) == 1 : drop[static_cast<size_t>(i)])) out.push_back(x.size(i));
  return {x.reshape(out)};
}

std::vector<Tensor> unsqueeze_op(OpContext& c) {
  const Tensor& x = c.input(0);
  std::vector<int64_t> axes = axes_of(c, 13, 1);
  int64_t rank = x.dim() + static_cast<int64_t>(axes.size());
  std::vector<bool> added(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    a = wrap_axis(c, a, rank);
    if (added[static_cast<size_t>(a)]) c.fail("axis " + std::to_string(a) + " repeats");
    added[static_cast<size_t>(a)] = true;
  }
  Shape out;
  int64_t j = 0;
  for (int64_t i = 0; i < rank; ++i) out.push_back(added[static_cast<size_t>(i)] ? 1 : x.size(j++));
  return {x.reshape(out)};
}

std::vector<Tensor> concat_op(OpContext& c) {
  std::vector<Tensor> parts;
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.has_input(i)) parts.push_back(c.input(i));
  if (parts.empty()) c.fail("needs at least one input");
  int64_t axis = wrap_axis(c, c.attr_int("axis"), parts[0].dim());
  return {cat(parts, axis)};
}

std::vector<Tensor> split_op(OpContext& c) {
  const Tensor& x = c.input(0);
  int64_t axis = wrap_axis(c, c.attr_int("axis", 0), x.dim());
  std::vector<int64_t> sizes = c.opset() >= 13 ? (c.has_input(1) ? c.ints_input(1) : std::vector<int64_t>{})
                                               : c.attr_ints("split");
  int64_t n = x.size(axis);
  if (sizes.empty()) {
    int64_t parts = c.opset() >= 18 && c.has_attr("num_outputs") ? c.attr_int("num_outputs")
                                                                  : static_cast<int64_t>(c.node().outputs.size());
    if (parts <= 0) c.fail("needs at least one output");
    int64_t chunk = (n + parts - 1) / parts;  // the last part may be smaller (Split-18)
    for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::max<int64_t>(0, std::min(chunk, n - i * chunk)));
  }
  if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != n)
    c.fail("split sizes " + shape_str(sizes) + " do not add up to " + std::to_string(n) + " (axis " +
           std::to_string(axis) + " of " + shape_str(x.shape()) + ")");
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(x.slice(axis, start, start + s).contiguous());
    start += s;
  }
  return out;
}

// Slice-10+: starts/ends/axes/steps as inputs (attributes before opset 10); indices clamp
// as NumPy's (ONNX Slice: "clamped to [0, dims] ... [-1, dims-1] for negative steps").
std::vector<Tensor> slice_op(OpContext& c) {
  Tensor x = c.input(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.attr_ints("starts");
    ends = c.attr_ints("ends");
    axes = c.attr_ints("axes");
  } else {
    starts = c.ints_input(1);
    ends = c.ints_input(2);
    if (c.has_input(3)) axes = c.ints_input(3);
    if (c.has_input(4)) steps = c.ints_input(4);
  }
  if (starts.size() != ends.size()) c.fail("starts and ends differ in length");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) c.fail("starts, ends, axes and steps differ in length");
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t axis = wrap_axis(c, axes[i], x.dim());
    int64_t dim = x.size(axis), step = steps[i];
    if (step == 0) c.fail("step 0 on axis " + std::to_string(axis));
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      if (step == 1) {
        x = x.slice(axis, s, std::max(s, e));
        continue;
      }
    } else {
      s = std::clamp<int64_t>(s, -1, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    std::vector<int64_t> idx;
    for (int64_t k = s; step > 0 ? k < e : k > e; k += step) idx.push_back(k);
    x = index_select(x, axis, ints_tensor(idx, x.device()));
  }
  return {x.contiguous()};
}

Tensor wrap_indices(const Tensor& idx, int64_t n) {
  Tensor i = idx.to(DType::i64);
  Tensor zero = Tensor::scalar(0, DType::i64, i.device());
  return where(lt(i, zero), add(i, Tensor::scalar(static_cast<double>(n), DType::i64, i.device())), i);
}

std::vector<Tensor> gather_op(OpContext& c) {
  const Tensor& x = c.input(0);
  int64_t axis = wrap_axis(c, c.attr_int("axis", 0), x.dim());
  const Tensor& given = c.input_as_given(1);
  if (given.device().type == DeviceType::cpu && is_integral(given.dtype()) && given.numel() <= 64) {
    // Indices on the host (constants, shape values): wrapped and checked here, one index as a view.
    std::vector<int64_t> v = given.to_vector<int64_t>();
    const int64_t n = x.size(axis);
    for (int64_t& i : v) {
      if (i < -n || i >= n)
        throw IndexError(c.where() + ": index " + std::to_string(i) + " is out of range for axis " +
                         std::to_string(axis) + " of size " + std::to_string(n));
      if (i < 0) i += n;
    }
    if (given.dim() == 0) return {x.select(axis, v[0])};
    Shape shape(x.shape().begin(), x.shape().begin() + axis);
    shape.insert(shape.end(), given.shape().begin(), given.shape().end());
    shape.insert(shape.end(), x.shape().begin() + axis + 1, x.shape().end());
    return {index_select(x, axis, ints_tensor(v, x.device())).reshape(shape)};
  }
  const Tensor& indices = c.input(1);
  Tensor idx = wrap_indices(indices, x.size(axis)).reshape({-1});
  Tensor g = index_select(x, axis, idx);
  Shape shape(x.shape().begin(), x.shape().begin() + axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), x.shape().begin() + axis + 1, x.shape().end());
  return {g.reshape(shape)};
}

std::vector<Tensor> gather_elements_op(OpContext& c) {
  const Tensor& x = c.input(0);
  int64_t axis = wrap_axis(c, c.attr_int("axis", 0), x.dim());
  return {gather(x, axis, wrap_indices(c.input(1), x.size(axis)))};
}

std::vector<Tensor> expand_op(OpContext& c) {
  const Tensor& x = c.input(0);
  Shape shape = broadcast_shapes(x.shape(), c.ints_input(1), "Expand");
  return {x.expand(shape).contiguous()};
}

std::vector<Tensor> tile_op(OpContext& c) {
  const Tensor& x = c.input(0);
  std::vector<int64_t> reps = c.ints_input(1);
  if (static_cast<int64_t>(reps.size()) != x.dim()) c.fail("repeats has " + std::to_string(reps.size()) + " entries for rank " + std::to_string(x.dim()));
  Shape inter, expanded, out;
  for (int64_t i = 0; i < x.dim(); ++i) {
    inter.push_back(1);
    inter.push_back(x.size(i));
    expanded.push_back(reps[static_cast<size_t>(i)]);
    expanded.push_back(x.size(i));
    out.push_back(reps[static_cast<size_t>(i)] * x.size(i));
  }
  return {x.reshape(inter).expand(expanded).contiguous().reshape(out)};
}

// Index, per output position along one axis, of the source element (edge, reflect, wrap).
std::vector<int64_t> pad_indices(int64_t n, int64_t before, int64_t after, const std::string& mode, OpContext& c) {
  std::vector<int64_t> idx;
  for (int64_t o = -before; o < n + after; ++o) {
    int64_t i = o;
    if (mode == "edge") {
      i = std::clamp<int64_t>(o, 0, n - 1);
    } else if (mode == "wrap") {
      i = ((o % n) + n) % n;
    } else {  // reflect (no edge repeat)
      if (n == 1) i = 0;
      else {
        int64_t period = 2 * (n - 1);
        i = ((o % period) + period) % period;
        if (i >= n) i = period - i;
      }
    }
    idx.push_back(i);
  }
  return idx;
}

std::vector<Tensor> pad_op(OpContext& c) {
  Tensor x = c.input(0);
  std::string mode = c.attr_string("mode", "constant");
  std::vector<int64_t> pads;
  double value = 0;
  std::vector<int64_t> axes;
  if (c.opset() < 11) {
    pads = c.attr_ints(c.opset() < 2 ? "paddings" : "pads");
    value = c.attr_float("value", 0.0);
  } else {
    pads = c.ints_input(1);
    if (c.has_input(2) && c.input(2).numel() > 0) value = c.scalar_input(2);
    if (c.has_input(3)) axes = c.ints_input(3);
  }
  int64_t rank = x.dim();
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  if (pads.size() != 2 * axes.size())
    c.fail("pads has " + std::to_string(pads.size()) + " values for " + std::to_string(axes.size()) + " axes");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") c.fail("unknown mode '" + mode + "'");
  std::vector<int64_t> before(static_cast<size_t>(rank), 0), after(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = wrap_axis(c, axes[i], rank);
    before[static_cast<size_t>(a)] = pads[i];
    after[static_cast<size_t>(a)] = pads[i + axes.size()];
  }
  // negative pads crop
  for (int64_t d = 0; d < rank; ++d) {
    int64_t b = std::min<int64_t>(before[size_t(d)], 0), a = std::min<int64_t>(after[size_t(d)], 0);
    if (b || a) x = x.slice(d, -b, x.size(d) + a);
    before[size_t(d)] = std::max<int64_t>(before[size_t(d)], 0);
    after[size_t(d)] = std::max<int64_t>(after[size_t(d)], 0);
  }
  if (mode != "constant") {
    for (int64_t d = 0; d < rank; ++d) {
      if (!before[size_t(d)] && !after[size_t(d)]) continue;
      if (x.size(d) == 0) c.fail("cannot pad an empty axis in mode " + mode);
      x = index_select(x, d, ints_tensor(pad_indices(x.size(d), before[size_t(d)], after[size_t(d)], mode, c), x.device()));
    }
    return {x.contiguous()};
  }
  Shape shape = x.shape();
  for (int64_t d = 0; d < rank; ++d) shape[size_t(d)] += before[size_t(d)] + after[size_t(d)];
  Tensor out = Tensor::full(shape, value, x.dtype(), x.device());
  Tensor view = out;
  for (int64_t d = 0; d < rank; ++d) view = view.slice(d, before[size_t(d)], before[size_t(d)] + x.size(d));
  view.copy_(x);
  return {out};
}

std::vector<Tensor> shape_op(OpContext& c) {
  const Tensor& x = c.input(0);
  int64_t rank = x.dim();
  int64_t start = c.attr_int("start", 0), end = c.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  std::vector<int64_t> dims(x.shape().begin() + start, x.shape().begin() + std::max(start, end));
  return {ints_tensor(dims, c.device())};
}

std::vector<Tensor> constant_op(OpContext& c) {
  if (c.has_attr("value")) return {c.attr_tensor("value").to(c.device())};
  if (c.has_attr("value_float"))
    return {Tensor::scalar(c.attr_float("value_float", 0), DType::f32, c.device())};
  if (c.has_attr("value_int")) return {Tensor::scalar(static_cast<double>(c.attr_int("value_int")), DType::i64, c.device())};
  if (c.has_attr("value_ints")) return {ints_tensor(c.attr_ints("value_ints"), c.device())};
  if (c.has_attr("value_floats")) {
    std::vector<double> v = c.attr_floats("value_floats");
    return {from_doubles(v, {static_cast<int64_t>(v.size())}, DType::f32, c.device())};
  }
  c.fail("no value attribute Kiln supports (value, value_float(s), value_int(s)); strings and sparse tensors are not");
}

std::vector<Tensor> constant_of_shape_op(OpContext& c) {
  Shape shape = c.ints_input(0);
  double v = 0;
  DType dt = DType::f32;
  if (c.has_attr("value")) {
    const Tensor& t = c.attr_tensor("value");
    if (t.numel() != 1) c.fail("attribute 'value' must hold one element");
    dt = t.dtype();
    v = t.to(DType::f64).reshape({}).item<double>();
  }
  return {Tensor::full(shape, v, dt, c.device())};
}

std::vector<Tensor> range_op(OpContext& c) {
  double start = c.scalar_input(0), limit = c.scalar_input(1), delta = c.scalar_input(2);
  DType dt = c.input(0).dtype();
  if (delta == 0) c.fail("delta is 0");
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
  std::vector<double> v(static_cast<size_t>(n));
  double acc = start;
  for (auto& e : v) {
    e = acc;
    acc += delta;
  }
  return {from_doubles(v, {n}, dt, c.device())};
}

std::vector<Tensor> depth_to_space_op(OpContext& c) {
  const Tensor& x = c.input(0);
  if (x.dim() != 4) c.fail("expects [N, C, H, W], got " + shape_str(x.shape()));
  int64_t b = c.attr_int("blocksize"), n = x.size(0), ch = x.size(1), h = x.size(2), w = x.size(3);
  if (b <= 0 || ch % (b * b)) c.fail("channels " + std::to_string(ch) + " are not a multiple of blocksize^2");
  bool crd = c.attr_string("mode", "DCR") == "CRD";
  Tensor y = crd ? x.reshape({n, ch / (b * b), b, b, h, w}).permute({0, 1, 4, 2, 5, 3})
                 : x.reshape({n, b, b, ch / (b * b), h, w}).permute({0, 3, 4, 1, 5, 2});
  return {y.contiguous().reshape({n, ch / (b * b), h * b, w * b})};
}

std::vector<Tensor> space_to_depth_op(OpContext& c) {
  const Tensor& x = c.input(0);
  if (x.dim() != 4) c.fail("expects [N, C, H, W], got " + shape_str(x.shape()));
  int64_t b = c.attr_int("blocksize"), n = x.size(0), ch = x.size(1), h = x.size(2), w = x.size(3);
  if (b <= 0 || h % b || w % b) c.fail("H and W must be multiples of blocksize");
  Tensor y = x.reshape({n, ch, h / b, b, w / b, b}).permute({0, 3, 5, 1, 2, 4});
  return {y.contiguous().reshape({n, ch * b * b, h / b, w / b})};
}

std::vector<Tensor> trilu_op(OpContext& c) {
  const Tensor& x = c.input(0);
  if (x.dim() < 2) c.fail("expects at least 2 dimensions");
  int64_t k = c.has_input(1) ? static_cast<int64_t>(c.scalar_input(1)) : 0;
  bool upper = c.attr_int("upper", 1) != 0;
  int64_t m = x.size(-2), n = x.size(-1);
  std::vector<uint8_t> mask(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) mask[size_t(i * n + j)] = upper ? (j - i >= k) : (j - i <= k);
  Tensor mt = Tensor::from_host(mask.data(), mask.size(), DType::bool_, {m, n}, x.device());
  return {where(mt, x, Tensor::scalar(0, x.dtype(), x.device()))};
}

std::vector<Tensor> eye_like_op(OpContext& c) {
  const Tensor& x = c.input(0);
  if (x.dim() != 2) c.fail("expects a 2-d input, got " + shape_str(x.shape()));
  DType dt = c.has_attr("dtype") ? dtype_of_onnx(static_cast<int32_t>(c.attr_int("dtype")), c.where()) : x.dtype();
  int64_t k = c.attr_int("k", 0), m = x.size(0), n = x.size(1);
  std::vector<double> v(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    if (i + k >= 0 && i + k < n) v[size_t(i * n + i + k)] = 1.0;
  return {from_doubles(v, {m, n}, dt, c.device())};
}

std::vector<Tensor> identity_op(OpContext& c) { return {c.input(0)}; }

// Dropout at inference (training_mode false, the default): the identity, and an all-true mask.
std::vector<Tensor> dropout_op(OpContext& c) {
  const Tensor& x = c.input(0);
  bool training = c.opset() >= 12 && c.has_input(2) && c.scalar_input(2) != 0;
  double ratio = c.opset() >= 12 ? (c.has_input(1) ? c.scalar_input(1) : 0.5) : c.attr_float("ratio", 0.5);
  if (training && ratio != 0) c.fail("training mode with a non-zero ratio is random; Kiln runs Dropout for inference");
  return {x, Tensor::ones(x.shape(), DType::bool_, x.device())};
}

}  // namespace

void register_shape_ops(OpTable& t) {
  t["Reshape"] = reshape_op;
  t["Flatten"] = flatten_op;
  t["Transpose"] = transpose_op;
  t["Squeeze"] = squeeze_op;
  t["Unsqueeze"] = unsqueeze_op;
  t["Concat"] = concat_op;
  t["Split"] = split_op;
  t["Slice"] = slice_op;
  t["Gather"] = gather_op;
  t["GatherElements"] = gather_elements_op;
  t["Expand"] = expand_op;
  t["Tile"] = tile_op;
  t["Pad"] = pad_op;
  t["Shape"] = shape_op;
  t["Size"] = [](OpContext& c) -> std::vector<Tensor> {
    return {Tensor::scalar(static_cast<double>(c.input(0).numel()), DType::i64, c.device())};
  };
  t["Constant"] = constant_op;
  t["ConstantOfShape"] = constant_of_shape_op;
  t["Range"] = range_op;
  t["DepthToSpace"] = depth_to_space_op;
  t["SpaceToDepth"] = space_to_depth_op;
  t["Trilu"] = trilu_op;
  t["EyeLike"] = eye_like_op;
  t["Identity"] = identity_op;
  t["Dropout"] = dropout_op;
}

}  // namespace kiln::onnx
