// CpuBackend::copy (with dtype conversion), fill, where and adam_step; the ISA selection
// and sqrt helper of strided.h. unary and binary live in cpu_unary.cpp / cpu_binary.cpp.
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided.h"

#if KILN_X86
#include <immintrin.h>
#endif

namespace kiln::cpu {

// ---- ISA selection ----
namespace {
Isa detect_isa() {
  Isa best = Isa::base;
#if KILN_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = Isa::avx2;
  if (best == Isa::avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
    best = Isa::avx512;
#endif
  if (const char* env = std::getenv("KILN_CPU_ISA")) {
    std::string_view s(env);
    Isa cap = s == "base" ? Isa::base : s == "avx2" ? Isa::avx2 : Isa::avx512;
    best = std::min(best, cap);
  }
  return best;
}
Isa best_isa() {
  static const Isa isa = detect_isa();
  return isa;
}
std::atomic<int> g_isa{-1};
}  // namespace

Isa cpu_isa() {
  int v = g_isa.load(std::memory_order_relaxed);
  if (v < 0) {
    v = static_cast<int>(best_isa());
    g_isa.store(v, std::memory_order_relaxed);
  }
  return static_cast<Isa>(v);
}

Isa set_cpu_isa(Isa isa) {
  Isa v = std::min(isa, best_isa());
  g_isa.store(static_cast<int>(v), std::memory_order_relaxed);
  return v;
}

// ---- sqrt of contiguous floats ----
namespace {
#if KILN_X86
KILN_TARGET_AVX512 void sqrt_avx512(float* o, const float* a, int64_t n) {
  int64_t i = 0;
  // maskz_ forms: _mm512_sqrt_ps trips GCC 12's -Wmaybe-uninitialized (_mm512_undefined_ps).
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(o + i, _mm512_maskz_sqrt_ps(0xffff, _mm512_loadu_ps(a + i)));
  if (i < n) {
    __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(o + i, m, _mm512_maskz_sqrt_ps(m, _mm512_maskz_loadu_ps(m, a + i)));
  }
}
KILN_TARGET_AVX2 void sqrt_avx2(float* o, const float* a, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, _mm256_sqrt_ps(_mm256_loadu_ps(a + i)));
  for (; i < n; ++i) o[i] = _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(a[i])));
}
void sqrt_sse(float* o, const float* a, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(o + i, _mm_sqrt_ps(_mm_loadu_ps(a + i)));
  for (; i < n; ++i) o[i] = _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(a[i])));
}
#endif
}  // namespace

void sqrt_contiguous(float* out, const float* in, int64_t n) {
#if KILN_X86
  switch (cpu_isa()) {
    case Isa::avx512: return sqrt_avx512(out, in, n);
    case Isa::avx2: return sqrt_avx2(out, in, n);
    case Isa::base: return sqrt_sse(out, in, n);
  }
#endif
  for (int64_t i = 0; i < n; ++i) out[i] = std::sqrt(in[i]);
}

// ---- copy ----
namespace {

template <class D, class S>
struct ConvertKernel {
  int64_t so, si;
  KILN_INLINE void operator()(char* const* p, int64_t n) const {
    if (so == sizeof(D) && si == sizeof(S)) {
      D* __restrict o = reinterpret_cast<D*>(p[0]);
      const S* __restrict a = reinterpret_cast<const S*>(p[1]);
      for (int64_t i = 0; i < n; ++i) o[i] = convert<D>(a[i]);
    } else if (si == 0) {
      D v = convert<D>(*reinterpret_cast<const S*>(p[1]));
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<D*>(p[0] + i * so) = v;
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<D*>(p[0] + i * so) = convert<D>(*reinterpret_cast<const S*>(p[1] + i * si));
    }
  }
};

template <class U>  // same dtype: moves bits
struct MoveKernel {
  int64_t so, si;
  KILN_INLINE void operator()(char* const* p, int64_t n) const {
    if (so == sizeof(U) && si == sizeof(U)) {
      std::memcpy(p[0], p[1], static_cast<size_t>(n) * sizeof(U));
    } else if (si == 0) {
      U v = *reinterpret_cast<const U*>(p[1]);
      if (so == sizeof(U)) std::fill_n(reinterpret_cast<U*>(p[0]), n, v);
      else for (int64_t i = 0; i < n; ++i) *reinterpret_cast<U*>(p[0] + i * so) = v;
    } else {
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<U*>(p[0] + i * so) = *reinterpret_cast<const U*>(p[1] + i * si);
    }
  }
};

// out's inner dim is contiguous and in's second dim is (x.t().contiguous(), NCHW <-> NHWC):
// copy B x B tiles, B elements = one cache line, through a buffer so that each side
// streams whole lines (power-of-two strides would otherwise thrash one L1 set).
template <class U>
void copy_transposed(const StridedIter<2>& it) {
  constexpr int64_t B = std::max<int64_t>(8, 64 / static_cast<int64_t>(sizeof(U)));
  const int64_t cols = it.size[0], rows = it.size[1];
  const int64_t os1 = it.stride[1][0], is0 = it.stride[0][1];
  const int64_t outer = it.numel / (cols * rows), rb = (rows + B - 1) / B, cb = (cols + B - 1) / B;
  StridedIter<2> rest = it;  // the dims above the 2-d tile plane
  rest.ndim = it.ndim - 2;
  for (int d = 0; d < rest.ndim; ++d) {
    rest.size[d] = it.size[d + 2];
    rest.stride[d][0] = it.stride[d + 2][0];
    rest.stride[d][1] = it.stride[d + 2][1];
  }
  parallel_for(outer * rb * cb, std::max<int64_t>(1, kGrain / (B * B)), [&](int64_t b, int64_t e) {
    U buf[B][B];
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / (rb * cb), r0 = (t / cb) % rb * B, c0 = t % cb * B;
      char* p[2];
      int64_t idx[kMaxDims];
      rest.locate(o, rest.base, p, idx);
      int64_t nr = std::min(rows - r0, B), nc = std::min(cols - c0, B);
      for (int64_t c = 0; c < nc; ++c) {
        const U* src = reinterpret_cast<const U*>(p[1] + (c0 + c) * is0) + r0;
        for (int64_t r = 0; r < nr; ++r) buf[c][r] = src[r];
      }
      for (int64_t r = 0; r < nr; ++r) {
        U* dst = reinterpret_cast<U*>(p[0] + (r0 + r) * os1) + c0;
        for (int64_t c = 0; c < nc; ++c) dst[c] = buf[c][r];
      }
    }
  });
}

}  // namespace

void CpuBackend::copy(const TensorArg& out, const TensorArg& in) {
  check_shape("copy", "input", in, out.shape);
  auto it = make_iter<2>(out.shape, {&out, &in});
  if (it.numel == 0) return;
  if (out.dtype == in.dtype) {
    const int64_t es = static_cast<int64_t>(dtype_size(out.dtype));
    if (it.ndim >= 2 && it.stride[0][0] == es && it.stride[0][1] != es && it.stride[1][1] == es &&
        it.size[0] >= 8 && it.size[1] >= 8) {
      visit_size(dtype_size(out.dtype), [&](auto tag) { copy_transposed<typename decltype(tag)::type>(it); });
      return;
    }
    visit_size(dtype_size(out.dtype), [&](auto tag) {
      using U = typename decltype(tag)::type;
      launch<false>(it, MoveKernel<U>{it.inner_stride(0), it.inner_stride(1)}, 4 * kGrain);
    });
    return;
  }
  visit_dtype(out.dtype, [&](auto dtag) {
    using D = typename decltype(dtag)::type;
    visit_dtype(in.dtype, [&](auto stag) {
      using S = typename decltype(stag)::type;
      // f32 <-> bf16 (autocast's casts) per ISA level; the rest on the baseline.
      constexpr bool mv = (std::is_same_v<D, float> && std::is_same_v<S, bfloat16>) ||
                          (std::is_same_v<D, bfloat16> && std::is_same_v<S, float>);
      launch<mv>(it, ConvertKernel<D, S>{it.inner_stride(0), it.inner_stride(1)});
    });
  });
}

// ---- fill ----
namespace {
template <class U>
struct FillKernel {
  U v;
  int64_t so;
  KILN_INLINE void operator()(char* const* p, int64_t n) const {
    if (so == sizeof(U)) std::fill_n(reinterpret_cast<U*>(p[0]), n, v);
    else for (int64_t i = 0; i < n; ++i) *reinterpret_cast<U*>(p[0] + i * so) = v;
  }
};
}  // namespace

void CpuBackend::fill(const TensorArg& out, double value) {
  KILN_CHECK(out.strides.size() == out.shape.size(), ShapeError, "fill: ", out.strides.size(),
             " strides for shape ", shape_str(out.shape));
  auto it = make_iter<1>(out.shape, {&out});
  if (it.numel == 0) return;
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using U = typename Bits<sizeof(T)>::type;
    launch<false>(it, FillKernel<U>{std::bit_cast<U>(scalar_as<T>(value)), it.inner_stride(0)}, 4 * kGrain);
  });
}

// ---- where ----
namespace {
template <class U>
struct WhereKernel {
  int64_t so, sc, sa, sb;
  KILN_INLINE void operator()(char* const* p, int64_t n) const {
    constexpr int64_t es = sizeof(U);
    if (so == es && sc == 1 && sa == es && sb == es) {
      U* __restrict o = reinterpret_cast<U*>(p[0]);
      const uint8_t* __restrict c = reinterpret_cast<const uint8_t*>(p[1]);
      const U* __restrict a = reinterpret_cast<const U*>(p[2]);
      const U* __restrict b = reinterpret_cast<const U*>(p[3]);
      for (int64_t i = 0; i < n; ++i) {
        U m = static_cast<U>(U(0) - static_cast<U>(c[i] != 0));
        o[i] = static_cast<U>((a[i] & m) | (b[i] & static_cast<U>(~m)));
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      const char* src = *reinterpret_cast<const uint8_t*>(p[1] + i * sc) ? p[2] + i * sa : p[3] + i * sb;
      *reinterpret_cast<U*>(p[0] + i * so) = *reinterpret_cast<const U*>(src);
    }
  }
};
}  // namespace

void CpuBackend::where(const TensorArg& out, const TensorArg& cond, const TensorArg& a, const TensorArg& b) {
  check_shape("where", "cond", cond, out.shape);
  check_shape("where", "a", a, out.shape);
  check_shape("where", "b", b, out.shape);
  KILN_CHECK(cond.dtype == DType::bool_ || cond.dtype == DType::u8, DTypeError, "where: condition is ",
             dtype_name(cond.dtype), ", expected bool");
  KILN_CHECK(a.dtype == out.dtype && b.dtype == out.dtype, DTypeError, "where: operands are ", dtype_name(a.dtype),
             " and ", dtype_name(b.dtype), ", output ", dtype_name(out.dtype));
  auto it = make_iter<4>(out.shape, {&out, &cond, &a, &b});
  if (it.numel == 0) return;
  visit_size(dtype_size(out.dtype), [&](auto tag) {
    using U = typename decltype(tag)::type;
    launch<false>(it, WhereKernel<U>{it.inner_stride(0), it.inner_stride(1), it.inner_stride(2), it.inner_stride(3)});
  });
}

// ---- adam_step ----
namespace {
// torch.optim.Adam/AdamW (_single_tensor_adam, amsgrad off), the scalars rounded to T as
// torch's kernels do: grad += wd*param (Adam) or param *= 1 - lr*wd (AdamW);
// m.lerp_(grad, 1-b1); v = v*b2 + (1-b2)*g*g; param += -lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps).
template <class T>
struct AdamKernel {
  T decay, wd, w1, b2, c2, neg_step, bc2_sqrt, eps;
  bool decoupled;
  KILN_INLINE void operator()(char* const* ptr, int64_t n) const {
    T* __restrict p = reinterpret_cast<T*>(ptr[0]);
    const T* __restrict g = reinterpret_cast<const T*>(ptr[1]);
    T* __restrict m = reinterpret_cast<T*>(ptr[2]);
    T* __restrict v = reinterpret_cast<T*>(ptr[3]);
    constexpr int64_t kBlock = 256;
    T root[kBlock];
    for (int64_t b = 0; b < n; b += kBlock) {
      const int64_t len = std::min(kBlock, n - b);
      for (int64_t j = 0; j < len; ++j) {
        const int64_t i = b + j;
        T pi = p[i], gi = g[i], mi = m[i];
        if (decoupled) pi = pi * decay;
        else gi = gi + wd * pi;
        mi = w1 < T(0.5) ? mi + w1 * (gi - mi) : gi - (gi - mi) * (T(1) - w1);
        T vi = v[i] * b2 + c2 * gi * gi;
        p[i] = pi;
        m[i] = mi;
        v[i] = vi;
        root[j] = vi;
      }
      if constexpr (std::is_same_v<T, float>) sqrt_contiguous(root, root, len);
      else for (int64_t j = 0; j < len; ++j) root[j] = std::sqrt(root[j]);
      for (int64_t j = 0; j < len; ++j) p[b + j] = p[b + j] + neg_step * m[b + j] / (root[j] / bc2_sqrt + eps);
    }
  }
};
}  // namespace

void CpuBackend::adam_step(const TensorArg& param, const TensorArg& grad, const TensorArg& exp_avg,
                           const TensorArg& exp_avg_sq, const AdamParams& ap) {
  for (const TensorArg* t : {&grad, &exp_avg, &exp_avg_sq}) {
    check_shape("adam_step", "state", *t, param.shape);
    KILN_CHECK(t->dtype == param.dtype, DTypeError, "adam_step: param is ", dtype_name(param.dtype), ", state is ",
               dtype_name(t->dtype));
  }
  for (const TensorArg* t : {&param, &grad, &exp_avg, &exp_avg_sq})
    KILN_CHECK(t->is_contiguous(), ValueError, "adam_step: tensors must be contiguous (shape ",
               shape_str(param.shape), ")");
  KILN_CHECK(ap.step >= 1, ValueError, "adam_step: step must be >= 1, got ", ap.step);
  const int64_t n = param.numel();
  if (n == 0) return;
  const double bc1 = 1 - std::pow(ap.beta1, static_cast<double>(ap.step));
  const double bc2 = 1 - std::pow(ap.beta2, static_cast<double>(ap.step));
  Shape flat{n};
  Strides unit{1};
  std::array<const int64_t*, 4> strides{unit.data(), unit.data(), unit.data(), unit.data()};
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t es = sizeof(T);
    auto base = [&](const TensorArg& t) { return static_cast<char*>(t.data) + t.offset * es; };
    StridedIter<4> it(1, flat.data(), {base(param), base(grad), base(exp_avg), base(exp_avg_sq)}, strides,
                      {es, es, es, es});
    AdamKernel<T> k{T(1 - ap.lr * ap.weight_decay), T(ap.weight_decay), T(1 - ap.beta1), T(ap.beta2),
                    T(1 - ap.beta2), T(-(ap.lr / bc1)), T(std::sqrt(bc2)), T(ap.eps), ap.decoupled};
    launch<std::is_same_v<T, float>>(it, k);
  };
  if (param.dtype == DType::f32) run(TypeTag<float>{});
  else if (param.dtype == DType::f64) run(TypeTag<double>{});
  else throw DTypeError(detail::str_cat("adam_step: ", dtype_name(param.dtype), " is not supported on cpu"));
}

}  // namespace kiln::cpu
