// Internal to the CPU backend: the per-element pieces of CpuBackend::reduce (cpu_reduce.cpp).
// Accumulators take runs of reduced elements (run(p, n, stride bytes, linear index of p))
// and merge with the accumulator of a later part (threads split long reductions).
// NaN rules follow torch: max/min return NaN when any element is NaN, argmax/argmin the
// index of the first NaN; ties keep the first index.
#pragma once
#include <cmath>
#include <limits>

#include "backends/cpu/strided.h"

namespace kiln::cpu::reduce_detail {

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
inline double variance(double s1, double s2, int64_t n, double correction) {
  return (s2 - s1 * s1 / static_cast<double>(n)) / std::max(0.0, static_cast<double>(n) - correction);
}

}  // namespace kiln::cpu::reduce_detail
