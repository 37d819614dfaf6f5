// CpuBackend::gather, scatter_add, index_select, index_add, exactly as torch's (i64
// indices; every index is checked first, IndexError names the op, the index, the dim
// and its size). index_select / index_add copy or add whole rows when the dims after
// `dim` are contiguous; otherwise they run as gather / scatter_add over an index
// expanded with stride 0. scatter_add runs on one thread (indices may repeat).
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided.h"

namespace kiln::cpu {
namespace {

struct RangeCheck {
  int64_t s, size;
  bool bad = false;
  KILN_INLINE void operator()(char* const* p, int64_t n) {
    bool b = false;
    for (int64_t i = 0; i < n; ++i) b |= static_cast<uint64_t>(*reinterpret_cast<const int64_t*>(p[0] + i * s)) >= static_cast<uint64_t>(size);
    bad |= b;
  }
};
struct FirstBad {
  int64_t s, size, value = 0;
  bool found = false;
  KILN_INLINE void operator()(char* const* p, int64_t n) {
    for (int64_t i = 0; i < n && !found; ++i) {
      int64_t v = *reinterpret_cast<const int64_t*>(p[0] + i * s);
      if (v < 0 || v >= size) found = true, value = v;
    }
  }
};

// Throws IndexError unless every value of index is in [0, size).
void check_indices(const char* op, const TensorArg& index, int64_t dim, int64_t size) {
  KILN_CHECK(index.dtype == DType::i64, DTypeError, op, ": index must be i64, got ", dtype_name(index.dtype));
  KILN_CHECK(index.strides.size() == index.shape.size(), ShapeError, op, ": index has ", index.strides.size(),
             " strides for shape ", shape_str(index.shape));
  auto it = make_iter<1>(index.shape, {&index});
  RangeCheck check{it.inner_stride(0), size};
  it.run(0, it.numel, check);
  if (!check.bad) return;
  FirstBad first{it.inner_stride(0), size};
  it.run(0, it.numel, first);
  throw IndexError(detail::str_cat(op, ": index ", first.value, " is out of range for dimension ", dim, " of size ", size));
}

// Every dim but `dim` of `small` must be <= that of `big` (torch's gather/scatter rule).
void check_fits(const char* op, const char* what, const Shape& small, const char* bigname, const Shape& big,
                int64_t dim, bool equal) {
  bool ok = small.size() == big.size();
  for (size_t d = 0; ok && d < small.size(); ++d)
    if (static_cast<int64_t>(d) != dim) ok = equal ? small[d] == big[d] : small[d] <= big[d];
  KILN_CHECK(ok, ShapeError, op, ": ", what, " shape ", shape_str(small), " does not fit ", bigname, " shape ",
             shape_str(big), " at dim ", dim);
}

template <class T>
KILN_INLINE T add_value(T a, T b) {
  using C = compute_t<T>;
  if constexpr (std::is_floating_point_v<C>) return T(C(a) + C(b));
  else if constexpr (std::is_same_v<T, bool>) return a || b;
  else return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) + static_cast<std::make_unsigned_t<T>>(b));
}

template <class U>
struct GatherKernel {  // operands: out, index, in (in's stride along dim zeroed)
  int64_t so, si, sx, dim_stride;
  KILN_INLINE void operator()(char* const* p, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) {
      int64_t idx = *reinterpret_cast<const int64_t*>(p[1] + i * si);
      *reinterpret_cast<U*>(p[0] + i * so) = *reinterpret_cast<const U*>(p[2] + i * sx + idx * dim_stride);
    }
  }
};
template <class T>
struct ScatterAddKernel {  // operands: out (stride along dim zeroed), index, src
  int64_t so, si, ss, dim_stride;
  KILN_INLINE void operator()(char* const* p, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) {
      int64_t idx = *reinterpret_cast<const int64_t*>(p[1] + i * si);
      T* o = reinterpret_cast<T*>(p[0] + i * so + idx * dim_stride);
      *o = add_value(*o, *reinterpret_cast<const T*>(p[2] + i * ss));
    }
  }
};

// An iterator over `shape` for (a, index, b) where `zeroed` (0 or 2) has no stride along dim.
StridedIter<3> index_iter(const Shape& shape, const TensorArg& a, const TensorArg& index, const TensorArg& b,
                          int zeroed, int64_t dim) {
  Strides za = a.strides, zb = b.strides;
  (zeroed == 0 ? za : zb)[dim] = 0;
  auto base = [](const TensorArg& t) {
    return static_cast<char*>(t.data) + t.offset * static_cast<int64_t>(dtype_size(t.dtype));
  };
  return StridedIter<3>(static_cast<int>(shape.size()), shape.data(), {base(a), base(index), base(b)},
                        {za.data(), index.strides.data(), zb.data()},
                        {static_cast<int64_t>(dtype_size(a.dtype)), 8, static_cast<int64_t>(dtype_size(b.dtype))});
}

void gather_impl(const TensorArg& out, const TensorArg& in, int64_t dim, const TensorArg& index) {
  auto it = index_iter(index.shape, out, index, in, 2, dim);
  if (it.numel == 0) return;
  const int64_t dim_stride = in.strides[dim] * static_cast<int64_t>(dtype_size(in.dtype));
  visit_size(dtype_size(in.dtype), [&](auto tag) {
    using U = typename decltype(tag)::type;
    launch<false>(it, GatherKernel<U>{it.inner_stride(0), it.inner_stride(1), it.inner_stride(2), dim_stride});
  });
}

void scatter_add_impl(const TensorArg& out, int64_t dim, const TensorArg& index, const TensorArg& src) {
  auto it = index_iter(index.shape, out, index, src, 0, dim);
  if (it.numel == 0) return;
  const int64_t dim_stride = out.strides[dim] * static_cast<int64_t>(dtype_size(out.dtype));
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    ScatterAddKernel<T> k{it.inner_stride(0), it.inner_stride(1), it.inner_stride(2), dim_stride};
    it.run(0, it.numel, k);
  });
}

// A 1-d index as the index of a gather/scatter over `shape`: stride 0 but along dim.
TensorArg expand_index(const TensorArg& index, const Shape& shape, int64_t dim) {
  Strides st(shape.size(), 0);
  st[dim] = index.shape.empty() ? 0 : index.strides[0];
  return TensorArg{index.data, index.offset, DType::i64, shape, st};
}

// The dims after `dim` form one contiguous block (of `inner` elements).
bool rows_contiguous(const TensorArg& t, int64_t dim, int64_t& inner) {
  inner = 1;
  for (int64_t d = static_cast<int64_t>(t.shape.size()) - 1; d > dim; --d) {
    if (t.shape[d] != 1 && t.strides[d] != inner) return false;
    inner *= t.shape[d];
  }
  return true;
}

// Row layout of (a, b) for index_select / index_add: outer dims (before dim) iterate,
// each row is `inner` contiguous elements.
struct Rows {
  StridedIter<2> outer;
  int64_t inner = 1, es = 1, a_dim = 0, b_dim = 0;  // dim strides in bytes
  const int64_t* idx = nullptr;
  int64_t idx_stride = 1, len = 0;
};
Rows make_rows(const TensorArg& a, const TensorArg& b, int64_t dim, const TensorArg& index, int64_t inner) {
  Rows r;
  r.es = static_cast<int64_t>(dtype_size(a.dtype));
  r.outer = StridedIter<2>(static_cast<int>(dim), a.shape.data(),
                           {static_cast<char*>(a.data) + a.offset * r.es, static_cast<char*>(b.data) + b.offset * r.es},
                           {a.strides.data(), b.strides.data()}, {r.es, r.es});
  r.inner = inner;
  r.a_dim = a.strides[dim] * r.es;
  r.b_dim = b.strides[dim] * r.es;
  r.idx = static_cast<const int64_t*>(index.data) + index.offset;
  r.idx_stride = index.shape.empty() ? 0 : index.strides[0];
  r.len = index.numel();
  return r;
}

void check_index_1d(const char* op, const TensorArg& index) {
  KILN_CHECK(index.shape.size() <= 1, ShapeError, op, ": index must be 1-d, got shape ", shape_str(index.shape));
}

}  // namespace

void CpuBackend::gather(const TensorArg& out, const TensorArg& in, int64_t dim, const TensorArg& index) {
  dim = wrap_dim(dim, static_cast<int64_t>(in.shape.size()), "gather");
  check_shape("gather", "output", out, index.shape);
  check_fits("gather", "index", index.shape, "input", in.shape, dim, false);
  KILN_CHECK(out.dtype == in.dtype, DTypeError, "gather: output is ", dtype_name(out.dtype), ", input ",
             dtype_name(in.dtype));
  check_indices("gather", index, dim, in.shape[dim]);
  gather_impl(out, in, dim, index);
}

void CpuBackend::scatter_add(const TensorArg& out, int64_t dim, const TensorArg& index, const TensorArg& src) {
  dim = wrap_dim(dim, static_cast<int64_t>(out.shape.size()), "scatter_add");
  check_fits("scatter_add", "index", index.shape, "output", out.shape, dim, false);
  check_fits("scatter_add", "index", index.shape, "src", src.shape, -1, false);
  KILN_CHECK(out.dtype == src.dtype, DTypeError, "scatter_add: output is ", dtype_name(out.dtype), ", src ",
             dtype_name(src.dtype));
  check_indices("scatter_add", index, dim, out.shape[dim]);
  scatter_add_impl(out, dim, index, src);
}

void CpuBackend::index_select(const TensorArg& out, const TensorArg& in, int64_t dim, const TensorArg& index) {
  dim = wrap_dim(dim, static_cast<int64_t>(in.shape.size()), "index_select");
  check_index_1d("index_select", index);
  check_fits("index_select", "output", out.shape, "input", in.shape, dim, true);
  KILN_CHECK(out.shape[dim] == index.numel() && out.dtype == in.dtype, ShapeError, "index_select: output ",
             shape_str(out.shape), " ", dtype_name(out.dtype), " does not fit ", index.numel(), " indices of ",
             dtype_name(in.dtype));
  check_indices("index_select", index, dim, in.shape[dim]);
  int64_t inner_out, inner_in;
  if (!rows_contiguous(out, dim, inner_out) || !rows_contiguous(in, dim, inner_in)) {
    gather_impl(out, in, dim, expand_index(index, out.shape, dim));
    return;
  }
  Rows r = make_rows(out, in, dim, index, inner_out);
  const size_t bytes = static_cast<size_t>(r.inner * r.es);
  parallel_for(r.outer.numel * r.len, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, r.inner)),
               [&](int64_t b, int64_t e) {
                 char* p[2] = {};
                 int64_t ix[kMaxDims];
                 for (int64_t t = b; t < e; ++t) {
                   int64_t j = t % r.len;
                   if (t == b || j == 0) r.outer.locate(t / r.len, r.outer.base, p, ix);
                   std::memcpy(p[0] + j * r.a_dim, p[1] + r.idx[j * r.idx_stride] * r.b_dim, bytes);
                 }
               });
}

void CpuBackend::index_add(const TensorArg& out, int64_t dim, const TensorArg& index, const TensorArg& src) {
  dim = wrap_dim(dim, static_cast<int64_t>(out.shape.size()), "index_add");
  check_index_1d("index_add", index);
  check_fits("index_add", "src", src.shape, "output", out.shape, dim, true);
  KILN_CHECK(src.shape[dim] == index.numel() && out.dtype == src.dtype, ShapeError, "index_add: src ",
             shape_str(src.shape), " ", dtype_name(src.dtype), " does not fit ", index.numel(), " indices into ",
             dtype_name(out.dtype));
  check_indices("index_add", index, dim, out.shape[dim]);
  int64_t inner_out, inner_src;
  if (!rows_contiguous(out, dim, inner_out) || !rows_contiguous(src, dim, inner_src)) {
    scatter_add_impl(out, dim, expand_index(index, src.shape, dim), src);
    return;
  }
  // Tasks are (outer index, column block): disjoint parts of out, so threads never collide.
  Rows r = make_rows(out, src, dim, index, inner_out);
  const int64_t cb = std::max<int64_t>(256, r.inner / 8), blocks = (r.inner + cb - 1) / cb;
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(r.outer.numel * blocks, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, cb * r.len)),
                 [&](int64_t b, int64_t e) {
                   char* p[2];
                   int64_t ix[kMaxDims];
                   for (int64_t t = b; t < e; ++t) {
                     r.outer.locate(t / blocks, r.outer.base, p, ix);
                     const int64_t c0 = t % blocks * cb, c1 = std::min(r.inner, c0 + cb);
                     for (int64_t j = 0; j < r.len; ++j) {
                       T* __restrict o = reinterpret_cast<T*>(p[0] + r.idx[j * r.idx_stride] * r.a_dim);
                       const T* __restrict s = reinterpret_cast<const T*>(p[1] + j * r.b_dim);
                       for (int64_t c = c0; c < c1; ++c) o[c] = add_value(o[c], s[c]);
                     }
                   }
                 });
  });
}

}  // namespace kiln::cpu
