// ONNX ops that run on the host because the engine has no kernel for them (each is
// a clearly named host fallback: the tensors are copied to the CPU, computed element by
// element and copied back to the input's device): TopK, CumSum, Einsum, NonZero, GatherND,
// ScatterND, ScatterElements, OneHot, Compress, NonMaxSuppression, ReverseSequence.
// Resize and Upsample compute their interpolation taps on the host and apply them on the
// device (index_select + weighted sums); see ops_resize.cpp.
#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

#include "engine/onnx/op_context.h"

namespace kiln::onnx {

namespace {

// A contiguous host copy of a tensor's bytes.
struct HostBytes {
  std::vector<uint8_t> data;
  size_t esize = 0;
  DType dtype = DType::f32;
  Shape shape;
};
HostBytes host_bytes(const Tensor& t) {
  HostBytes h;
  Tensor c = t.to(Device()).contiguous();
  h.esize = dtype_size(c.dtype());
  h.dtype = c.dtype();
  h.shape = c.shape();
  h.data.resize(static_cast<size_t>(c.numel()) * h.esize);
  if (c.numel())
    std::memcpy(h.data.data(), static_cast<const uint8_t*>(c.impl()->storage->data()) + c.offset() * h.esize, h.data.size());
  return h;
}
Tensor to_device(const HostBytes& h, Device d) {
  return Tensor::from_host(h.data.data(), h.data.size() / std::max<size_t>(h.esize, 1), h.dtype, h.shape, d);
}

std::vector<Tensor> topk_op(OpContext& c) {
  const Tensor& x = c.input(0);
  int64_t k = c.opset() >= 10 ? static_cast<int64_t>(c.ints_input(1).at(0)) : c.attr_int("k");
  int64_t axis = wrap_axis(c, c.attr_int("axis", -1), x.dim());
  bool largest = c.attr_int("largest", 1) != 0;
  int64_t n = x.size(axis);
  if (k < 0 || k > n) c.fail("k = " + std::to_string(k) + " is outside [0, " + std::to_string(n) + "]");
  Tensor xt = x.transpose(axis, -1).contiguous();
  std::vector<double> v = host_doubles(xt);
  int64_t rows = n ? static_cast<int64_t>(v.size()) / n : 0;
  std::vector<int64_t> idx(static_cast<size_t>(rows * k));
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = v.data() + r * n;
    std::iota(order.begin(), order.end(), 0);
    // ties keep the lower index first (ONNX TopK)
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return largest ? row[a] > row[b] : row[a] < row[b];
    });
    std::copy(order.begin(), order.begin() + k, idx.begin() + r * k);
  }
  Shape s = xt.shape();
  s.back() = k;
  Tensor it = Tensor::from_vector(idx, s, x.device());
  Tensor vals = gather(xt, xt.dim() - 1, it);
  return {vals.transpose(axis, -1).contiguous(), it.transpose(axis, -1).contiguous()};
}

std::vector<Tensor> cumsum_op(OpContext& c) {
  const Tensor& x = c.input(0);
  int64_t axis = wrap_axis(c, static_cast<int64_t>(c.scalar_input(1)), x.dim());
  bool exclusive = c.attr_int("exclusive", 0) != 0, reverse = c.attr_int("reverse", 0) != 0;
  Tensor xt = x.transpose(axis, -1).contiguous();
  std::vector<double> v = host_doubles(xt);
  int64_t n = x.size(axis), rows = n ? static_cast<int64_t>(v.size()) / n : 0;
  for (int64_t r = 0; r < rows; ++r) {
    double acc = 0;
    for (int64_t j = 0; j < n; ++j) {
      int64_t i = r * n + (reverse ? n - 1 - j : j);
      double e = v[size_t(i)];
      v[size_t(i)] = exclusive ? acc : acc + e;
      acc += e;
    }
  }
  return {from_doubles(v, xt.shape(), x.dtype(), x.device()).transpose(axis, -1).contiguous()};
}

// Einsum on the host: letters name dims, "..." broadcast dims, "->" the output (implicit
// output: the letters that appear once, sorted). Sums over every other letter.
std::vector<Tensor> einsum_op(OpContext& c) {
  std::string eq;
  for (char ch : c.attr_string("equation", "")) if (ch != ' ') eq += ch;
  std::string lhs = eq, rhs;
  bool explicit_out = false;
  if (auto p = eq.find("->"); p != std::string::npos) {
    lhs = eq.substr(0, p);
    rhs = eq.substr(p + 2);
    explicit_out = true;
  }
  std::vector<std::string> terms;
  size_t start = 0;
  for (size_t i = 0; i <= lhs.size(); ++i)
    if (i == lhs.size() || lhs[i] == ',') {
      terms.push_back(lhs.substr(start, i - start));
      start = i + 1;
    }
  if (terms.size() != c.num_inputs()) c.fail("equation '" + eq + "' has " + std::to_string(terms.size()) + " operands for " + std::to_string(c.num_inputs()) + " inputs");
  // expand "..." to capital-free placeholder letters '0'..'9'
  int64_t ell_rank = 0;
  for (size_t t = 0; t < terms.size(); ++t)
    if (auto p = terms[t].find("..."); p != std::string::npos)
      ell_rank = std::max<int64_t>(ell_rank, c.input(t).dim() - static_cast<int64_t>(terms[t].size() - 3));
  auto expand = [&](std::string s, int64_t rank) {
    auto p = s.find("...");
    if (p == std::string::npos) return s;
    int64_t r = rank < 0 ? ell_rank : rank - static_cast<int64_t>(s.size() - 3);
    std::string e;
    for (int64_t i = ell_rank - r; i < ell_rank; ++i) e += static_cast<char>('0' + i);
    return s.substr(0, p) + e + s.substr(p + 3);
  };
  std::map<char, int64_t> size;
  std::vector<std::vector<double>> vals;
  for (size_t t = 0; t < terms.size(); ++t) {
    const Tensor& x = c.input(t);
    terms[t] = expand(terms[t], x.dim());
    if (static_cast<int64_t>(terms[t].size()) != x.dim()) c.fail("operand " + std::to_string(t) + " '" + terms[t] + "' does not fit shape " + shape_str(x.shape()));
    for (size_t i = 0; i < terms[t].size(); ++i) {
      int64_t d = x.size(static_cast<int64_t>(i));
      auto [it, fresh] = size.emplace(terms[t][i], d);
      if (!fresh && it->second != d) {
        if (it->second == 1) it->second = d;
        else if (d != 1) c.fail(std::string("dimension '") + terms[t][i] + "' has sizes " + std::to_string(it->second) + " and " + std::to_string(d));
      }
    }
    vals.push_back(host_doubles(x));
  }
  if (explicit_out) {
    rhs = expand(rhs, -1);
  } else {
    std::map<char, int> count;
    for (auto& t : terms) for (char ch : t) count[ch]++;
    for (int64_t i = 0; i < ell_rank; ++i) rhs += static_cast<char>('0' + i);
    for (auto& [ch, n] : count) if (n == 1 && !(ch >= '0' && ch <= '9')) rhs += ch;
  }
  std::vector<char> letters;
  for (auto& [ch, n] : size) letters.push_back(ch);
  Shape out_shape;
  for (char ch : rhs) out_shape.push_back(size.at(ch));
  std::vector<double> out(static_cast<size_t>(numel(out_shape)), 0.0);
  std::vector<int64_t> pos(letters.size(), 0);
  auto index_of = [&](char ch) { return static_cast<size_t>(std::find(letters.begin(), letters.end(), ch) - letters.begin()); };
  int64_t total = 1;
  for (char ch : letters) total *= size[ch];
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rem = flat;
    for (size_t i = letters.size(); i-- > 0;) {
      pos[i] = rem % size[letters[i]];
      rem /= size[letters[i]];
    }
    double prodv = 1;
    for (size_t t = 0; t < terms.size(); ++t) {
      const Tensor& x = c.input(t);
      int64_t off = 0;
      for (size_t i = 0; i < terms[t].size(); ++i) {
        int64_t d = x.size(static_cast<int64_t>(i));
        off = off * d + (d == 1 ? 0 : pos[index_of(terms[t][i])]);
      }
      prodv *= vals[t][size_t(off)];
    }
    int64_t o = 0;
    for (size_t i = 0; i < rhs.size(); ++i) o = o * out_shape[i] + pos[index_of(rhs[i])];
    out[size_t(o)] += prodv;
  }
  return {from_doubles(out, out_shape, c.input(0).dtype(), c.device())};
}

std::vector<Tensor> nonzero_op(OpContext& c) {
  const Tensor& x = c.input(0);
  std::vector<double> v = host_doubles(x);
  int64_t r = x.dim();
  std::vector<int64_t> hits;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != 0) hits.push_back(static_cast<int64_t>(i));
  int64_t n = static_cast<int64_t>(hits.size());
  std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(r, 1) * n));
  Strides st = contiguous_strides(x.shape());
  for (int64_t j = 0; j < n; ++j) {
    int64_t rem = hits[size_t(j)];
    for (int64_t d = 0; d < r; ++d) {
      out[size_t(d * n + j)] = rem / st[size_t(d)];
      rem %= st[size_t(d)];
    }
    if (r == 0) out[size_t(j)] = 0;
  }
  return {Tensor::from_vector(out, {std::max<int64_t>(r, 1), n}, x.device())};
}

// Flat element offsets of the slices that GatherND / ScatterND indices [.., k] address,
// with batch_dims leading dims shared. Returns offsets (in slice units) per index tuple.
std::vector<int64_t> nd_offsets(OpContext& c, const Shape& data, const Tensor& indices, int64_t batch_dims,
                                int64_t& slice) {
  std::vector<int64_t> idx = indices.to_vector<int64_t>();
  int64_t k = indices.size(-1);
  int64_t r = static_cast<int64_t>(data.size());
  if (batch_dims + k > r) c.fail("index tuples of length " + std::to_string(k) + " do not fit data " + shape_str(data));
  slice = 1;
  for (int64_t d = batch_dims + k; d < r; ++d) slice *= data[size_t(d)];
  int64_t tuples = k ? static_cast<int64_t>(idx.size()) / k : numel(Shape(indices.shape().begin(), indices.shape().end() - 1));
  int64_t per_batch = 1;
  for (int64_t d = 0; d < batch_dims; ++d) per_batch *= indices.size(d);
  int64_t tuples_per_batch = per_batch ? tuples / per_batch : 0;
  int64_t batch_block = 1;
  for (int64_t d = batch_dims; d < batch_dims + k; ++d) batch_block *= data[size_t(d)];
  std::vector<int64_t> out;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t dim = data[size_t(batch_dims + j)], i = idx[size_t(t * k + j)];
      if (i < 0) i += dim;
      if (i < 0 || i >= dim) throw IndexError(c.where() + ": index " + std::to_string(idx[size_t(t * k + j)]) + " is out of range for dimension " + std::to_string(dim));
      off = off * dim + i;
    }
    int64_t b = tuples_per_batch ? t / tuples_per_batch : 0;
    out.push_back(b * batch_block + off);
  }
  return out;
}

std::vector<Tensor> gather_nd_op(OpContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& indices = c.input(1);
  int64_t b = c.attr_int("batch_dims", 0), slice;
  std::vector<int64_t> offs = nd_offsets(c, x.shape(), indices, b, slice);
  HostBytes h = host_bytes(x), o;
  o.esize = h.esize;
  o.dtype = h.dtype;
  o.data.resize(offs.size() * static_cast<size_t>(slice) * h.esize);
  for (size_t t = 0; t < offs.size(); ++t)
    std::memcpy(o.data.data() + t * size_t(slice) * h.esize, h.data.data() + size_t(offs[t] * slice) * h.esize, size_t(slice) * h.esize);
  o.shape = Shape(indices.shape().begin(), indices.shape().end() - 1);
  o.shape.insert(o.shape.end(), x.shape().begin() + b + indices.size(-1), x.shape().end());
  return {to_device(o, x.device())};
}


double combine(const std::string& red, double a, double b, OpContext& c) {
  if (red == "none") return b;
  if (red == "add") return a + b;
  if (red == "mul") return a * b;
  if (red == "max") return std::max(a, b);
  if (red == "min") return std::min(a, b);
  c.fail("unknown reduction '" + red + "'");
}

std::vector<Tensor> scatter_nd_op(OpContext& c) {
  const Tensor& x = c.input(0);
  int64_t slice;
  std::vector<int64_t> offs = nd_offsets(c, x.shape(), c.input(1), 0, slice);
  std::string red = c.attr_string("reduction", "none");
  std::vector<double> v = host_doubles(x), u = host_doubles(c.input(2));
  if (u.size() != offs.size() * size_t(slice)) c.fail("updates " + shape_str(c.input(2).shape()) + " do not fit the indices");
  for (size_t t = 0; t < offs.size(); ++t)
    for (int64_t e = 0; e < slice; ++e) {
      double& d = v[size_t(offs[t] * slice + e)];
      d = combine(red, d, u[t * size_t(slice) + size_t(e)], c);
    }
  return {from_doubles(v, x.shape(), x.dtype(), x.device())};
}

std::vector<Tensor> scatter_elements_op(OpContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& ind = c.input(1);
  int64_t axis = wrap_axis(c, c.attr_int("axis", 0), x.dim());
  std::string red = c.attr_string("reduction", "none");
  std::vector<double> v = host_doubles(x), u = host_doubles(c.input(2));
  std::vector<int64_t> idx = ind.to_vector<int64_t>();
  Strides xs = contiguous_strides(x.shape()), is = contiguous_strides(ind.shape());
  for (size_t f = 0; f < idx.size(); ++f) {
    int64_t rem = static_cast<int64_t>(f), off = 0;
    for (int64_t d = 0; d < ind.dim(); ++d) {
      int64_t p = rem / is[size_t(d)];
      rem %= is[size_t(d)];
      if (d == axis) {
        p = idx[f] < 0 ? idx[f] + x.size(axis) : idx[f];
        if (p < 0 || p >= x.size(axis)) throw IndexError(c.where() + ": index " + std::to_string(idx[f]) + " is out of range for axis size " + std::to_string(x.size(axis)));
      }
      off += p * xs[size_t(d)];
    }
    v[size_t(off)] = combine(red, v[size_t(off)], u[f], c);
  }
  return {from_doubles(v, x.shape(), x.dtype(), x.device())};
}

std::vector<Tensor> one_hot_op(OpContext& c) {
  const Tensor& ind = c.input(0);
  int64_t depth = static_cast<int64_t>(c.scalar_input(1));
  std::vector<double> vals = host_doubles(c.input(2));
  if (vals.size() != 2) c.fail("values must hold [off_value, on_value]");
  int64_t rank = ind.dim() + 1;
  int64_t axis = wrap_axis(c, c.attr_int("axis", -1), rank);
  std::vector<double> iv = host_doubles(ind);
  Shape s = ind.shape();
  s.insert(s.begin() + axis, depth);
  std::vector<double> out(static_cast<size_t>(numel(s)), vals[0]);
  int64_t inner = 1;
  for (int64_t d = axis; d < ind.dim(); ++d) inner *= ind.size(d);
  for (size_t f = 0; f < iv.size(); ++f) {
    int64_t i = static_cast<int64_t>(iv[f]);
    if (i < 0) i += depth;
    if (i < 0 || i >= depth) continue;
    int64_t outer = static_cast<int64_t>(f) / inner, in = static_cast<int64_t>(f) % inner;
    out[size_t((outer * depth + i) * inner + in)] = vals[1];
  }
  return {from_doubles(out, s, c.input(2).dtype(), c.device())};
}

std::vector<Tensor> compress_op(OpContext& c) {
  Tensor x = c.input(0);
  std::vector<double> cond = host_doubles(c.input(1));
  int64_t axis = 0;
  if (c.has_attr("axis")) axis = wrap_axis(c, c.attr_int("axis"), x.dim());
  else x = x.reshape({-1});
  std::vector<int64_t> keep;
  for (size_t i = 0; i < cond.size() && static_cast<int64_t>(i) < x.size(axis); ++i)
    if (cond[i] != 0) keep.push_back(static_cast<int64_t>(i));
  return {index_select(x, axis, ints_tensor(keep, x.device()))};
}

std::vector<Tensor> reverse_sequence_op(OpContext& c) {
  const Tensor& x = c.input(0);
  std::vector<int64_t> lens = c.ints_input(1);
  int64_t baxis = c.attr_int("batch_axis", 1), taxis = c.attr_int("time_axis", 0);
  std::vector<Tensor> parts;
  for (int64_t b = 0; b < x.size(baxis); ++b) {
    Tensor s = x.narrow(baxis, b, 1);
    int64_t t_axis = taxis, len = lens.at(size_t(b)), n = s.size(t_axis);
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < n; ++i) idx.push_back(i < len ? len - 1 - i : i);
    parts.push_back(index_select(s, t_axis, ints_tensor(idx, x.device())));
  }
  return {cat(parts, baxis)};
}

// NonMaxSuppression-11: greedy per batch and class; boxes [B, N, 4], scores [B, C, N];
// output [K, 3] of (batch, class, box) in selection order.
std::vector<Tensor> nms_op(OpContext& c) {
  const Tensor& boxes = c.input(0);
  const Tensor& scores = c.input(1);
  int64_t max_out = c.has_input(2) && c.input(2).numel() ? static_cast<int64_t>(c.scalar_input(2)) : 0;
  double iou_th = c.has_input(3) && c.input(3).numel() ? c.scalar_input(3) : 0.0;
  bool has_score_th = c.has_input(4) && c.input(4).numel();
  double score_th = has_score_th ? c.scalar_input(4) : 0.0;
  bool center = c.attr_int("center_point_box", 0) != 0;
  std::vector<double> bx = host_doubles(boxes), sc = host_doubles(scores);
  int64_t nb = scores.size(0), nc = scores.size(1), n = scores.size(2);
  auto corners = [&](int64_t b, int64_t i, double* o) {
    const double* p = bx.data() + (b * n + i) * 4;
    if (center) {
      o[0] = p[1] - p[3] / 2; o[1] = p[0] - p[2] / 2; o[2] = p[1] + p[3] / 2; o[3] = p[0] + p[2] / 2;
    } else {
      o[0] = std::min(p[0], p[2]); o[1] = std::min(p[1], p[3]); o[2] = std::max(p[0], p[2]); o[3] = std::max(p[1], p[3]);
    }
  };
  std::vector<int64_t> out;
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t cl = 0; cl < nc; ++cl) {
      const double* s = sc.data() + (b * nc + cl) * n;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < n; ++i)
        if (!has_score_th || s[i] > score_th) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t d) { return s[a] > s[d]; });
      std::vector<int64_t> kept;
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        double a[4];
        corners(b, i, a);
        bool ok = true;
        for (int64_t j : kept) {
          double d[4];
          corners(b, j, d);
          double iw = std::max(0.0, std::min(a[2], d[2]) - std::max(a[0], d[0]));
          double ih = std::max(0.0, std::min(a[3], d[3]) - std::max(a[1], d[1]));
          double inter = iw * ih, uni = (a[2] - a[0]) * (a[3] - a[1]) + (d[2] - d[0]) * (d[3] - d[1]) - inter;
          if (uni > 0 && inter / uni > iou_th) { ok = false; break; }
        }
        if (ok) kept.push_back(i);
      }
      for (int64_t i : kept) out.insert(out.end(), {b, cl, i});
    }
  return {Tensor::from_vector(out, {static_cast<int64_t>(out.size() / 3), 3}, c.device())};
}

}  // namespace

void register_host_ops(OpTable& t) {
  t["TopK"] = topk_op;
  t["CumSum"] = cumsum_op;
  t["Einsum"] = einsum_op;
  t["NonZero"] = nonzero_op;
  t["GatherND"] = gather_nd_op;
  t["ScatterND"] = scatter_nd_op;
  t["ScatterElements"] = scatter_elements_op;
  t["Scatter"] = scatter_elements_op;
  t["OneHot"] = one_hot_op;
  t["Compress"] = compress_op;
  t["ReverseSequence"] = reverse_sequence_op;
  t["NonMaxSuppression"] = nms_op;
}

}  // namespace kiln::onnx
