// CpuBackend::reduce: sum, mean, prod, max, min, argmax, argmin, var over any set of dims.
//
// The input's dims split into kept and reduced ones (each collapsed, see strided.h).
// Inner mode (the reduced dims hold the smallest stride): each output walks its reduced
// elements, contiguous runs through vectorized helpers; few outputs with many elements
// split the reduced range over threads and merge partial results in order. Outer mode
// (a kept dim is innermost): rows of the innermost kept dim accumulate across the
// reduced elements, vectorized along the row. Results go to a f64/i64 buffer and are
// copied (converted) into `out`. Sums of floats accumulate in double; var is two-pass
// with the mean correction term (Chan, Golub & LeVeque); f16/bf16 reduce an f32 copy.
// NaN propagates through max/min and argmax points at the first NaN (reduce_kernels.h).
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/reduce_kernels.h"
#include "backends/cpu/strided.h"

namespace kiln::cpu {
namespace {
using namespace reduce_detail;

template <class Acc>
struct AccRunner {
  Acc* acc;
  int64_t stride, index;
  KILN_INLINE void operator()(char* const* p, int64_t n) {
    acc->run(p[0], n, stride, index);
    index += n;
  }
};

// The accumulator of an op's pass (var: pass 0 sums for the mean, pass 1 deviations).
template <class T, ReduceOp OP, int Pass>
using acc_t = std::conditional_t<
    OP == ReduceOp::var && Pass == 1, SqDevAcc<T>,
    std::conditional_t<OP == ReduceOp::sum || OP == ReduceOp::mean || OP == ReduceOp::var, SumAcc<T>,
                       std::conditional_t<OP == ReduceOp::prod, ProdAcc<T>,
                                          std::conditional_t<OP == ReduceOp::max || OP == ReduceOp::min,
                                                             ExtAcc<T, OP == ReduceOp::max>,
                                                             ArgAcc<T, OP == ReduceOp::argmax>>>>>;

// Accumulates reduced elements [b, e) from base into a fresh accumulator.
template <class A>
KILN_INLINE A accumulate(const StridedIter<1>& red, char* base, int64_t b, int64_t e, double mean) {
  A a{};
  if constexpr (requires { a.idx; }) a.idx = b;  // all values equal to worst(): the first index
  if constexpr (requires { a.mean; }) a.mean = mean;
  AccRunner<A> r{&a, red.inner_stride(0), b};
  red.run({base}, b, e, r);
  return a;
}

template <class T, ReduceOp OP, class A>
KILN_INLINE result_t<T, OP> result_of(const A& a, int64_t R) {
  if constexpr (OP == ReduceOp::sum || OP == ReduceOp::prod) return a.s;
  else if constexpr (OP == ReduceOp::mean) return static_cast<double>(a.s) / static_cast<double>(R);
  else if constexpr (OP == ReduceOp::max || OP == ReduceOp::min) return static_cast<result_t<T, OP>>(a.best);
  else return a.idx;
}

template <class T, ReduceOp OP>
KILN_INLINE result_t<T, OP> reduce_serial(const StridedIter<1>& red, char* base, double p0) {
  const int64_t R = red.numel;
  auto a = accumulate<acc_t<T, OP, 0>>(red, base, 0, R, 0);
  if constexpr (OP == ReduceOp::var) {
    auto d = accumulate<acc_t<T, OP, 1>>(red, base, 0, R, static_cast<double>(a.s) / static_cast<double>(R));
    return variance(d.s1, d.s2, R, p0);
  } else {
    return result_of<T, OP>(a, R);
  }
}

template <class T, ReduceOp OP>
struct OutputRunner {  // inner mode: one reduction per kept element
  const StridedIter<1>* red;
  result_t<T, OP>* dst;
  int64_t stride;
  double p0;
  KILN_INLINE void operator()(char* const* p, int64_t n) {
    for (int64_t i = 0; i < n; ++i) *dst++ = reduce_serial<T, OP>(*red, p[0] + i * stride, p0);
  }
};

// Tasks are outputs [b, e) (inner mode).
template <class T, ReduceOp OP>
struct OutputsJob {
  const StridedIter<2>* kept;
  const StridedIter<1>* red;
  result_t<T, OP>* tmp;
  double p0;
  KILN_INLINE void operator()(int64_t b, int64_t e) const {
    OutputRunner<T, OP> runner{red, tmp + b, kept->inner_stride(0), p0};
    kept->run(b, e, runner);
  }
};

// Tasks are the parts of one output's reduced range (few outputs, many elements).
template <class A>
struct PartsJob {
  const StridedIter<1>* red;
  char* base;
  int64_t parts;
  A* out;
  double mean;
  KILN_INLINE void operator()(int64_t b, int64_t e) const {
    for (int64_t i = b; i < e; ++i)
      out[i] = accumulate<A>(*red, base, red->numel * i / parts, red->numel * (i + 1) / parts, mean);
  }
};

template <bool mv, class A>
A accumulate_parallel(const StridedIter<1>& red, char* base, int parts, double mean) {
  std::vector<A> part(parts);
  launch_tasks<mv>(parts, 1, PartsJob<A>{&red, base, parts, part.data(), mean});
  for (int i = 1; i < parts; ++i) part[0].merge(part[i]);
  return part[0];
}

// ---- outer mode: rows of k kept elements accumulate over the reduced elements ----
template <class T, ReduceOp OP>
struct RowState {
  using C = compute_t<T>;
  using A = std::conditional_t<OP == ReduceOp::max || OP == ReduceOp::min || OP == ReduceOp::argmax ||
                                   OP == ReduceOp::argmin, C, std::conditional_t<OP == ReduceOp::var, double, sum_t<T>>>;
  static constexpr bool kMax = OP == ReduceOp::max || OP == ReduceOp::argmax;
  std::unique_ptr<A[]> acc;  // not std::vector: A may be bool
  std::vector<double> acc2, mean;  // var: sums of squared deviations, means
  std::vector<int64_t> idx;
  int64_t k = 0, sk = 0;
  bool second_pass = false;  // var: accumulating deviations from `mean`

  explicit RowState(int64_t capacity) : acc(new A[capacity]) {}
  void reset(int64_t n) {
    k = n;
    A init = OP == ReduceOp::prod ? A(1) : A(0);
    if constexpr (OP == ReduceOp::max || OP == ReduceOp::min || OP == ReduceOp::argmax || OP == ReduceOp::argmin)
      init = worst<kMax, C>();
    std::fill(acc.get(), acc.get() + n, init);
    if (OP == ReduceOp::var) acc2.assign(n, 0);
    if (OP == ReduceOp::argmax || OP == ReduceOp::argmin) idx.assign(n, 0);
  }
  struct Contiguous {
    const T* __restrict q;
    KILN_INLINE C operator()(int64_t j) const { return C(q[j]); }
  };
  struct Strided {
    const char* p;
    int64_t s;
    KILN_INLINE C operator()(int64_t j) const { return load<T>(p + j * s); }
  };
  KILN_INLINE void update(const char* p, int64_t r) {
    if (sk == sizeof(T)) row(acc.get(), Contiguous{reinterpret_cast<const T*>(p)}, r);
    else row(acc.get(), Strided{p, sk}, r);
  }
  template <class Get>
  KILN_INLINE void row(A* __restrict a, const Get& get, int64_t r) {
    if constexpr (OP == ReduceOp::sum || OP == ReduceOp::mean) {
      if constexpr (std::is_same_v<A, int64_t>)
        for (int64_t j = 0; j < k; ++j) a[j] = static_cast<int64_t>(static_cast<uint64_t>(a[j]) + static_cast<uint64_t>(static_cast<int64_t>(get(j))));
      else for (int64_t j = 0; j < k; ++j) a[j] += static_cast<A>(get(j));
    } else if constexpr (OP == ReduceOp::prod) {
      for (int64_t j = 0; j < k; ++j) a[j] = ProdAcc<T>::mul(a[j], static_cast<A>(get(j)));
    } else if constexpr (OP == ReduceOp::max || OP == ReduceOp::min) {
      for (int64_t j = 0; j < k; ++j) a[j] = pick(better<kMax>(get(j), a[j]), get(j), a[j]);
    } else if constexpr (OP == ReduceOp::argmax || OP == ReduceOp::argmin) {
      int64_t* __restrict ix = idx.data();
      for (int64_t j = 0; j < k; ++j) {
        bool b = better<kMax>(get(j), a[j]);
        a[j] = pick(b, get(j), a[j]);
        ix[j] = b ? r : ix[j];
      }
    } else if (!second_pass) {  // var, pass 1: sums
      for (int64_t j = 0; j < k; ++j) a[j] += static_cast<double>(get(j));
    } else {  // var, pass 2: deviations
      double* __restrict a2 = acc2.data();
      const double* __restrict m = mean.data();
      for (int64_t j = 0; j < k; ++j) {
        double d = static_cast<double>(get(j)) - m[j];
        a[j] += d;
        a2[j] += d * d;
      }
    }
  }
};

template <class S>
struct RowRunner {
  S* state;
  int64_t stride, r;
  KILN_INLINE void operator()(char* const* p, int64_t n) {
    for (int64_t i = 0; i < n; ++i) state->update(p[0] + i * stride, r++);
  }
};

template <class T, ReduceOp OP>
KILN_INLINE void outer_rows(const StridedIter<2>& kept, const StridedIter<1>& red, int64_t task_begin, int64_t task_end,
                int64_t kb, result_t<T, OP>* tmp, double p0) {
  const int64_t K0 = kept.size[0], nb = (K0 + kb - 1) / kb, R = red.numel;
  RowState<T, OP> st(std::min(kb, K0));
  st.sk = kept.stride[0][0];
  for (int64_t t = task_begin; t < task_end; ++t) {
    int64_t first = t / nb * K0 + t % nb * kb;  // kept linear index of the row's start
    int64_t k = std::min(kb, K0 - t % nb * kb);
    char* p[2];
    int64_t ix[kMaxDims];
    kept.locate(first, kept.base, p, ix);
    st.reset(k);
    RowRunner<RowState<T, OP>> run{&st, red.inner_stride(0), 0};
    red.run({p[0]}, 0, R, run);
    result_t<T, OP>* dst = tmp + first;
    if constexpr (OP == ReduceOp::var) {
      st.mean.resize(k);
      for (int64_t j = 0; j < k; ++j) st.mean[j] = st.acc[j] / R;
      std::fill(st.acc.get(), st.acc.get() + k, 0.0);
      st.second_pass = true;
      RowRunner<RowState<T, OP>> run2{&st, red.inner_stride(0), 0};
      red.run({p[0]}, 0, R, run2);
      st.second_pass = false;
      for (int64_t j = 0; j < k; ++j) dst[j] = variance(st.acc[j], st.acc2[j], R, p0);
    } else if constexpr (OP == ReduceOp::argmax || OP == ReduceOp::argmin) {
      for (int64_t j = 0; j < k; ++j) dst[j] = st.idx[j];
    } else if constexpr (OP == ReduceOp::mean) {
      for (int64_t j = 0; j < k; ++j) dst[j] = static_cast<double>(st.acc[j]) / R;
    } else {
      for (int64_t j = 0; j < k; ++j) dst[j] = static_cast<result_t<T, OP>>(st.acc[j]);
    }
  }
}

// Tasks are (kept outer index, block of kb columns) rows (outer mode).
template <class T, ReduceOp OP>
struct RowsJob {
  const StridedIter<2>* kept;
  const StridedIter<1>* red;
  int64_t kb;
  result_t<T, OP>* tmp;
  double p0;
  KILN_INLINE void operator()(int64_t b, int64_t e) const { outer_rows<T, OP>(*kept, *red, b, e, kb, tmp, p0); }
};

// f32 kernels are compiled for each ISA level (launch_tasks<true>).
template <class T, ReduceOp OP>
void reduce_typed(const StridedIter<2>& kept, const StridedIter<1>& red, result_t<T, OP>* tmp, double p0) {
  constexpr bool mv = std::is_same_v<T, float>;
  const int64_t M = kept.numel, R = red.numel;
  const bool outer = kept.ndim > 0 && kept.size[0] >= 8 && (red.ndim == 0 || kept.stride[0][0] < red.stride[0][0]);
  if (outer) {
    const int64_t K0 = kept.size[0];
    int threads = num_chunks(M * R, kGrain);
    int64_t kb = std::min<int64_t>(K0, 1024);
    if (M / K0 < threads) kb = std::max<int64_t>(64, (K0 + threads - 1) / threads);
    const int64_t tasks = M / K0 * ((K0 + kb - 1) / kb);
    launch_tasks<mv>(tasks, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, kb * R)),
                     RowsJob<T, OP>{&kept, &red, kb, tmp, p0});
    return;
  }
  const int parts = num_chunks(R, kGrain);
  if (parts > 1 && (M == 1 || R >= 4 * kGrain)) {  // few outputs: each one splits its elements over threads
    char* p[2];
    int64_t ix[kMaxDims];
    for (int64_t m = 0; m < M; ++m) {
      kept.locate(m, kept.base, p, ix);
      auto a = accumulate_parallel<mv, acc_t<T, OP, 0>>(red, p[0], parts, 0);
      if constexpr (OP == ReduceOp::var) {
        auto d = accumulate_parallel<mv, acc_t<T, OP, 1>>(red, p[0], parts, static_cast<double>(a.s) / R);
        tmp[m] = variance(d.s1, d.s2, R, p0);
      } else {
        tmp[m] = result_of<T, OP>(a, R);
      }
    }
    return;
  }
  launch_tasks<mv>(M, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, R)), OutputsJob<T, OP>{&kept, &red, tmp, p0});
}

}  // namespace

void CpuBackend::reduce(ReduceOp op, const TensorArg& out, const TensorArg& in, double p0) {
  const char* name = reduce_op_name(op);
  const int rank = static_cast<int>(in.shape.size());
  bool ok = out.shape.size() == in.shape.size() && out.strides.size() == out.shape.size() &&
            in.strides.size() == in.shape.size();
  for (int d = 0; ok && d < rank; ++d) ok = out.shape[d] == in.shape[d] || out.shape[d] == 1;
  KILN_CHECK(ok, ShapeError, name, ": output shape ", shape_str(out.shape), " does not fit input ",
             shape_str(in.shape));
  const bool arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
  KILN_CHECK(!arg || out.dtype == DType::i64, DTypeError, name, ": output must be i64, got ", dtype_name(out.dtype));
  if (out.numel() == 0) return;
  // Kernels exist for f32, f64 and i64 (compile time): f16/bf16 reduce an f32 copy (they
  // compute in float anyway), narrower integers and bool an i64 copy (same results).
  if (in.dtype != DType::f32 && in.dtype != DType::f64 && in.dtype != DType::i64) {
    const DType wide = is_floating(in.dtype) ? DType::f32 : DType::i64;
    std::vector<int64_t> buf((static_cast<size_t>(in.numel()) * dtype_size(wide) + 7) / 8);
    TensorArg w{buf.data(), 0, wide, in.shape, contiguous_strides(in.shape)};
    copy(w, in);
    return reduce(op, out, w, p0);
  }

  // Kept and reduced dims; by decreasing input stride unless argmax/argmin needs the
  // reduced elements in row-major order.
  std::vector<int> kd, rd;
  int64_t R = 1;
  for (int d = 0; d < rank; ++d) {
    if (out.shape[d] == 1 && in.shape[d] != 1) rd.push_back(d), R *= in.shape[d];
    else if (in.shape[d] != 1) kd.push_back(d);
  }
  if (R == 0) {
    switch (op) {
      case ReduceOp::sum: return fill(out, 0.0);
      case ReduceOp::prod: return fill(out, 1.0);
      case ReduceOp::mean: case ReduceOp::var: return fill(out, std::numeric_limits<double>::quiet_NaN());
      default:
        throw IndexError(detail::str_cat(name, ": cannot reduce over a dimension of size 0 (input shape ",
                                         shape_str(in.shape), ")"));
    }
  }
  auto by_stride = [&](int a, int b) { return in.strides[a] > in.strides[b]; };
  std::stable_sort(kd.begin(), kd.end(), by_stride);
  if (!arg) std::stable_sort(rd.begin(), rd.end(), by_stride);

  const int64_t ein = static_cast<int64_t>(dtype_size(in.dtype)), eout = static_cast<int64_t>(dtype_size(out.dtype));
  char* in_base = static_cast<char*>(in.data) + in.offset * ein;
  char* out_base = static_cast<char*>(out.data) + out.offset * eout;
  std::vector<int64_t> ks, kis, kos, rs, ris;
  for (int d : kd) ks.push_back(in.shape[d]), kis.push_back(in.strides[d]), kos.push_back(out.strides[d]);
  for (int d : rd) rs.push_back(in.shape[d]), ris.push_back(in.strides[d]);
  StridedIter<2> kept(static_cast<int>(ks.size()), ks.data(), {in_base, out_base}, {kis.data(), kos.data()},
                      {ein, eout});
  StridedIter<1> red(static_cast<int>(rs.size()), rs.data(), {in_base}, {ris.data()}, {ein});

  // Results in kept order, then copied (converted) into out.
  Shape kshape;
  Strides kstrides;
  for (int d = kept.ndim - 1; d >= 0; --d) kshape.push_back(kept.size[d]), kstrides.push_back(kept.stride[d][1] / eout);
  const int64_t M = kept.numel;
  std::vector<double> fbuf;
  std::vector<int64_t> ibuf;
  auto run = [&](auto tag, auto opc) {
    using T = typename decltype(tag)::type;
    constexpr ReduceOp OP = decltype(opc)::value;
    using V = result_t<T, OP>;
    V* tmp;
    if constexpr (std::is_same_v<V, double>) fbuf.resize(M), tmp = fbuf.data();
    else ibuf.resize(M), tmp = ibuf.data();
    reduce_typed<T, OP>(kept, red, tmp, p0);
    TensorArg src{tmp, 0, std::is_same_v<V, double> ? DType::f64 : DType::i64, kshape, contiguous_strides(kshape)};
    TensorArg dst{out.data, out.offset, out.dtype, kshape, kstrides};
    copy(dst, src);
  };
  visit_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int64_t>) {
      switch (op) {
        case ReduceOp::sum: return run(tag, std::integral_constant<ReduceOp, ReduceOp::sum>{});
        case ReduceOp::mean: return run(tag, std::integral_constant<ReduceOp, ReduceOp::mean>{});
        case ReduceOp::prod: return run(tag, std::integral_constant<ReduceOp, ReduceOp::prod>{});
        case ReduceOp::max: return run(tag, std::integral_constant<ReduceOp, ReduceOp::max>{});
        case ReduceOp::min: return run(tag, std::integral_constant<ReduceOp, ReduceOp::min>{});
        case ReduceOp::argmax: return run(tag, std::integral_constant<ReduceOp, ReduceOp::argmax>{});
        case ReduceOp::argmin: return run(tag, std::integral_constant<ReduceOp, ReduceOp::argmin>{});
        case ReduceOp::var: return run(tag, std::integral_constant<ReduceOp, ReduceOp::var>{});
        case ReduceOp::count: break;
      }
      throw ValueError(detail::str_cat("reduce: unknown op ", static_cast<int>(op)));
    }
  });
}

}  // namespace kiln::cpu
