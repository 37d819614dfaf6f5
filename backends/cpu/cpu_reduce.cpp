// CpuBackend::reduce: sum, mean, prod, max, min, argmax, argmin, var over any set of dims.
//
// The input's dims split into kept and reduced ones (each collapsed, see strided.h).
// Inner mode (the reduced dims hold the smallest stride): each output walks its reduced
// elements, contiguous runs through vectorized helpers; few outputs with many elements
// split the reduced range over threads and merge partial results in order. Outer mode
// (a kept dim is innermost): rows of the innermost kept dim accumulate across the
// reduced elements, vectorized along the row. Results go to a f64/i64 buffer and are
// copied (converted) into `out`. Sums of floats accumulate in double (contiguous f32 in
// float blocks, see sum_contiguous); var is two-pass with the mean correction term
// (Chan et al.); NaN propagates through max/min and argmax points at the first NaN.
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided.h"

namespace kiln::cpu {
namespace {

template <class T, ReduceOp OP>
using result_t = std::conditional_t<OP == ReduceOp::argmax || OP == ReduceOp::argmin, int64_t,
                                    std::conditional_t<OP == ReduceOp::mean || OP == ReduceOp::var, double, sum_t<T>>>;

template <class C>
KILN_INLINE C pick(bool c, C a, C b) {
  if constexpr (std::is_floating_point_v<C>) return sel(c, a, b);
  else return c ? a : b;
}
// x replaces cur for max (min): larger (smaller), or the first NaN.
template <bool IsMax, class C>
KILN_INLINE bool better(C x, C cur) {
  return (IsMax ? x > cur : x < cur) | ((x != x) & (cur == cur));
}
template <bool IsMax, class C>
constexpr C worst() {
  if constexpr (std::numeric_limits<C>::has_infinity)
    return IsMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
  else return IsMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
}
template <class T>
KILN_INLINE compute_t<T> load(const char* p) { return compute_t<T>(*reinterpret_cast<const T*>(p)); }

// Max (min) of n contiguous values, NaN if any; 16 lanes for the vectorizer.
template <class T, bool IsMax>
KILN_INLINE compute_t<T> extreme_contiguous(const T* __restrict q, int64_t n) {
  using C = compute_t<T>;
  constexpr int L = 16;
  C lane[L];
  for (int j = 0; j < L; ++j) lane[j] = worst<IsMax, C>();
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int j = 0; j < L; ++j) {
      C x = C(q[i + j]);
      lane[j] = pick((IsMax ? x > lane[j] : x < lane[j]) | (x != x), x, lane[j]);
    }
  C r = worst<IsMax, C>();
  for (int j = 0; j < L; ++j) r = pick(better<IsMax>(lane[j], r), lane[j], r);
  for (; i < n; ++i) r = pick(better<IsMax>(C(q[i]), r), C(q[i]), r);
  return r;
}

// ---- inner-mode accumulators: run(p, n, stride, index of p), merge(later part) ----
template <class T>
struct SumAcc {
  sum_t<T> s = 0;
  KILN_INLINE void run(const char* p, int64_t n, int64_t st, int64_t) {
    if constexpr (std::is_same_v<sum_t<T>, int64_t>) {
      uint64_t a = 0;
      for (int64_t i = 0; i < n; ++i) a += static_cast<uint64_t>(static_cast<int64_t>(load<T>(p + i * st)));
      s = static_cast<int64_t>(static_cast<uint64_t>(s) + a);
    } else {
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
        if (st == sizeof(T)) {
          s += sum_contiguous(reinterpret_cast<const T*>(p), n);
          return;
        }
      double a = 0;
      for (int64_t i = 0; i < n; ++i) a += static_cast<double>(load<T>(p + i * st));
      s += a;
    }
  }
  void merge(const SumAcc& o) {
    if constexpr (std::is_same_v<sum_t<T>, int64_t>) s = static_cast<int64_t>(static_cast<uint64_t>(s) + static_cast<uint64_t>(o.s));
    else s += o.s;
  }
};
template <class T>
struct ProdAcc {
  sum_t<T> s = 1;
  KILN_INLINE void run(const char* p, int64_t n, int64_t st, int64_t) {
    for (int64_t i = 0; i < n; ++i) s = mul(s, static_cast<sum_t<T>>(load<T>(p + i * st)));
  }
  static sum_t<T> mul(sum_t<T> a, sum_t<T> b) {
    if constexpr (std::is_same_v<sum_t<T>, int64_t>) return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    else return a * b;
  }
  void merge(const ProdAcc& o) { s = mul(s, o.s); }
};
template <class T, bool IsMax>
struct ExtAcc {
  compute_t<T> best = worst<IsMax, compute_t<T>>();
  KILN_INLINE void run(const char* p, int64_t n, int64_t st, int64_t) {
    compute_t<T> r = best;
    if (st == sizeof(T)) r = extreme_contiguous<T, IsMax>(reinterpret_cast<const T*>(p), n);
    else for (int64_t i = 0; i < n; ++i) r = pick(better<IsMax>(load<T>(p + i * st), r), load<T>(p + i * st), r);
    merge_value(r);
  }
  KILN_INLINE void merge_value(compute_t<T> r) { best = pick(better<IsMax>(r, best), r, best); }
  void merge(const ExtAcc& o) { merge_value(o.best); }
};
template <class T, bool IsMax>
struct ArgAcc {
  compute_t<T> best = worst<IsMax, compute_t<T>>();
  int64_t idx;  // starts at the part's first index: all values equal to worst() point there
  KILN_INLINE void run(const char* p, int64_t n, int64_t st, int64_t index) {
    using C = compute_t<T>;
    if (st == sizeof(T)) {
      const T* q = reinterpret_cast<const T*>(p);
      C r = extreme_contiguous<T, IsMax>(q, n);
      if (!better<IsMax>(r, best)) return;
      int64_t i = 0;
      if (r != r) while (C(q[i]) == C(q[i])) ++i;
      else while (C(q[i]) != r) ++i;
      best = r;
      idx = index + i;
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      C x = load<T>(p + i * st);
      if (better<IsMax>(x, best)) best = x, idx = index + i;
    }
  }
  void merge(const ArgAcc& o) {
    if (better<IsMax>(o.best, best)) best = o.best, idx = o.idx;
  }
};
template <class T>
struct SqDevAcc {  // sums of d and d^2 for d = x - mean
  double mean, s1 = 0, s2 = 0;
  KILN_INLINE void run(const char* p, int64_t n, int64_t st, int64_t) {
    constexpr int L = 8;
    double a1[L] = {}, a2[L] = {};
    int64_t i = 0;
    if (st == sizeof(T)) {
      const T* __restrict q = reinterpret_cast<const T*>(p);
      for (; i + L <= n; i += L)
        for (int j = 0; j < L; ++j) {
          double d = static_cast<double>(compute_t<T>(q[i + j])) - mean;
          a1[j] += d;
          a2[j] += d * d;
        }
    }
    for (; i < n; ++i) {
      double d = static_cast<double>(load<T>(p + i * st)) - mean;
      a1[0] += d;
      a2[0] += d * d;
    }
    for (int j = 0; j < L; ++j) s1 += a1[j], s2 += a2[j];
  }
  void merge(const SqDevAcc& o) { s1 += o.s1, s2 += o.s2; }
};
double variance(double s1, double s2, int64_t n, double correction) {
  return (s2 - s1 * s1 / static_cast<double>(n)) / std::max(0.0, static_cast<double>(n) - correction);
}

template <class Acc>
struct AccRunner {
  Acc* acc;
  int64_t stride, index;
  KILN_INLINE void operator()(char* const* p, int64_t n) {
    acc->run(p[0], n, stride, index);
    index += n;
  }
};

// Accumulates reduced elements [0, R) from base, over threads when there are many.
template <class Acc, class Make>
Acc accumulate(const StridedIter<1>& red, char* base, const Make& make) {
  auto part = [&](int64_t b, int64_t e) {
    Acc acc = make(b);
    AccRunner<Acc> r{&acc, red.inner_stride(0), b};
    red.run({base}, b, e, r);
    return acc;
  };
  int chunks = num_chunks(red.numel, kGrain);
  if (chunks <= 1) return part(0, red.numel);
  std::vector<Acc> parts(chunks, make(0));
  parallel_chunks(red.numel, chunks, [&](int i, int64_t b, int64_t e) { parts[i] = part(b, e); });
  for (int i = 1; i < chunks; ++i) parts[0].merge(parts[i]);
  return parts[0];
}

template <class T, ReduceOp OP>
result_t<T, OP> reduce_one(const StridedIter<1>& red, char* base, double p0) {
  const int64_t R = red.numel;
  if constexpr (OP == ReduceOp::sum) return accumulate<SumAcc<T>>(red, base, [](int64_t) { return SumAcc<T>{}; }).s;
  if constexpr (OP == ReduceOp::mean)
    return static_cast<double>(accumulate<SumAcc<T>>(red, base, [](int64_t) { return SumAcc<T>{}; }).s) / R;
  if constexpr (OP == ReduceOp::prod) return accumulate<ProdAcc<T>>(red, base, [](int64_t) { return ProdAcc<T>{}; }).s;
  if constexpr (OP == ReduceOp::max || OP == ReduceOp::min) {
    using A = ExtAcc<T, OP == ReduceOp::max>;
    return static_cast<result_t<T, OP>>(accumulate<A>(red, base, [](int64_t) { return A{}; }).best);
  }
  if constexpr (OP == ReduceOp::argmax || OP == ReduceOp::argmin) {
    using A = ArgAcc<T, OP == ReduceOp::argmax>;
    return accumulate<A>(red, base, [](int64_t b) { A a; a.idx = b; return a; }).idx;
  }
  if constexpr (OP == ReduceOp::var) {
    double mean = static_cast<double>(accumulate<SumAcc<T>>(red, base, [](int64_t) { return SumAcc<T>{}; }).s) / R;
    auto a = accumulate<SqDevAcc<T>>(red, base, [&](int64_t) { return SqDevAcc<T>{mean}; });
    return variance(a.s1, a.s2, R, p0);
  }
}

template <class T, ReduceOp OP>
struct OutputRunner {  // inner mode: one reduction per kept element
  const StridedIter<1>* red;
  result_t<T, OP>* dst;
  int64_t stride;
  double p0;
  void operator()(char* const* p, int64_t n) {
    for (int64_t i = 0; i < n; ++i) *dst++ = reduce_one<T, OP>(*red, p[0] + i * stride, p0);
  }
};

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
  KILN_INLINE void update(const char* p, int64_t r) {
    A* __restrict a = acc.get();
    if (sk == sizeof(T)) {
      const T* __restrict q = reinterpret_cast<const T*>(p);
      row(a, [&](int64_t j) { return C(q[j]); }, r);
    } else {
      row(a, [&](int64_t j) { return load<T>(p + j * sk); }, r);
    }
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
  void operator()(char* const* p, int64_t n) {
    for (int64_t i = 0; i < n; ++i) state->update(p[0] + i * stride, r++);
  }
};

template <class T, ReduceOp OP>
void outer_rows(const StridedIter<2>& kept, const StridedIter<1>& red, int64_t task_begin, int64_t task_end,
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

template <class T, ReduceOp OP>
void reduce_typed(const StridedIter<2>& kept, const StridedIter<1>& red, result_t<T, OP>* tmp, double p0) {
  const int64_t M = kept.numel, R = red.numel;
  const bool outer = kept.ndim > 0 && kept.size[0] >= 8 && (red.ndim == 0 || kept.stride[0][0] < red.stride[0][0]);
  if (outer) {
    const int64_t K0 = kept.size[0];
    int threads = num_chunks(M * R, kGrain);
    int64_t kb = std::min<int64_t>(K0, 1024);
    if (M / K0 < threads) kb = std::max<int64_t>(64, (K0 + threads - 1) / threads);
    const int64_t tasks = M / K0 * ((K0 + kb - 1) / kb);
    parallel_for(tasks, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, kb * R)),
                 [&](int64_t b, int64_t e) { outer_rows<T, OP>(kept, red, b, e, kb, tmp, p0); });
    return;
  }
  if (M == 1 || R >= 4 * kGrain) {  // few outputs: each one splits its elements over threads
    OutputRunner<T, OP> runner{&red, tmp, kept.inner_stride(0), p0};
    kept.run(0, M, runner);
    return;
  }
  parallel_for(M, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, R)), [&](int64_t b, int64_t e) {
    OutputRunner<T, OP> runner{&red, tmp + b, kept.inner_stride(0), p0};
    kept.run(b, e, runner);
  });
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
  });
}

}  // namespace kiln::cpu
