#include "backends/cpu/max_pool_2x2.h"

#include <algorithm>

#include "backends/cpu/strided.h"

#if KILN_X86
#include <immintrin.h>
#endif

namespace kiln::cpu {
namespace {
#if KILN_X86
// The maskz_ forms with every lane set: the plain ones trip GCC 12's -Wmaybe-uninitialized
// (their _mm512_undefined_* operand), as in cpu_elementwise.cpp's sqrt.
constexpr __mmask16 kAll = 0xffff;

// The 16 windows of rows (a0..a31, b0..b31) as 16 lanes each of v0 = a[2i], v1 = a[2i+1],
// v2 = b[2i], v3 = b[2i+1] -> the maximum (PyTorch's order: v > best or NaN takes v) and
// its offset 0..3 in the window.
KILN_TARGET_AVX512 inline void window_max(__m512 v0, __m512 v1, __m512 v2, __m512 v3, __m512& best, __m512i& at) {
  best = v0;
  at = _mm512_setzero_si512();
  const __m512 v[3] = {v1, v2, v3};
  for (int k = 0; k < 3; ++k) {
    const __mmask16 take = _mm512_cmp_ps_mask(v[k], best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v[k], v[k], _CMP_UNORD_Q);
    best = _mm512_mask_mov_ps(best, take, v[k]);
    at = _mm512_mask_mov_epi32(at, take, _mm512_set1_epi32(k + 1));
  }
}

// Flat indices of 16 windows starting at output ow: index0 + 2 * (ow + lane) + (at & 1) + (at >> 1) * W.
KILN_TARGET_AVX512 inline void store_indices(int64_t* ix, __mmask16 m, __m512i at, int64_t ow, int64_t index0,
                                             int64_t W) {
  const __m512i lane2 = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i col = _mm512_add_epi32(lane2, _mm512_and_si512(at, _mm512_set1_epi32(1)));
  const __m512i row = _mm512_maskz_srli_epi32(kAll, at, 1);  // 0 or 1
  for (int half = 0; half < 2; ++half) {
    const __m512i c = _mm512_maskz_cvtepi32_epi64(0xff, half ? _mm512_maskz_extracti64x4_epi64(0xf, col, 1) : _mm512_maskz_extracti64x4_epi64(0xf, col, 0));
    const __m512i r = _mm512_maskz_cvtepi32_epi64(0xff, half ? _mm512_maskz_extracti64x4_epi64(0xf, row, 1) : _mm512_maskz_extracti64x4_epi64(0xf, row, 0));
    __m512i idx = _mm512_add_epi64(_mm512_set1_epi64(index0 + 2 * ow), c);
    idx = _mm512_add_epi64(idx, _mm512_mullo_epi64(r, _mm512_set1_epi64(W)));
    _mm512_mask_storeu_epi64(ix + 8 * half, static_cast<__mmask8>(half ? m >> 8 : m), idx);
  }
}

KILN_TARGET_AVX512 void row_f32(const float* r0, const float* r1, float* y, int64_t* ix, int64_t Wo, int64_t index0,
                                int64_t W) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (int64_t ow = 0; ow < Wo; ow += 16) {
    const int64_t n = std::min<int64_t>(16, Wo - ow), in = 2 * n;
    const __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
    const __mmask16 lo = static_cast<__mmask16>(in >= 16 ? 0xffffu : (1u << in) - 1);
    const __mmask16 hi = static_cast<__mmask16>(in > 16 ? (1u << (in - 16)) - 1 : 0);
    const __m512 a0 = _mm512_maskz_loadu_ps(lo, r0 + 2 * ow), a1 = _mm512_maskz_loadu_ps(hi, r0 + 2 * ow + 16);
    const __m512 b0 = _mm512_maskz_loadu_ps(lo, r1 + 2 * ow), b1 = _mm512_maskz_loadu_ps(hi, r1 + 2 * ow + 16);
    __m512 best;
    __m512i at;
    window_max(_mm512_permutex2var_ps(a0, even, a1), _mm512_permutex2var_ps(a0, odd, a1),
               _mm512_permutex2var_ps(b0, even, b1), _mm512_permutex2var_ps(b0, odd, b1), best, at);
    _mm512_mask_storeu_ps(y + ow, m, best);
    store_indices(ix + ow, m, at, ow, index0, W);
  }
}

// bf16 -> f32 is a 16-bit shift; the maximum is one of the inputs, so its top half is its bf16.
KILN_TARGET_AVX512 void row_bf16(const bfloat16* r0, const bfloat16* r1, bfloat16* y, int64_t* ix, int64_t Wo,
                                 int64_t index0, int64_t W) {
  const __m512i lo16 = _mm512_set1_epi32(0xffff);
  for (int64_t ow = 0; ow < Wo; ow += 16) {
    const int64_t n = std::min<int64_t>(16, Wo - ow), in = 2 * n;
    const __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
    const __mmask32 lm = static_cast<__mmask32>(in >= 32 ? 0xffffffffu : (1u << in) - 1);
    // 32 bf16 = 16 pairs: as 32-bit lanes, the low half is the even element, the high half the odd one.
    const __m512i a = _mm512_maskz_loadu_epi16(lm, r0 + 2 * ow), b = _mm512_maskz_loadu_epi16(lm, r1 + 2 * ow);
    const __m512 v0 = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, _mm512_and_si512(a, lo16), 16));
    const __m512 v1 = _mm512_castsi512_ps(_mm512_maskz_andnot_epi32(kAll, lo16, a));
    const __m512 v2 = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, _mm512_and_si512(b, lo16), 16));
    const __m512 v3 = _mm512_castsi512_ps(_mm512_maskz_andnot_epi32(kAll, lo16, b));
    __m512 best;
    __m512i at;
    window_max(v0, v1, v2, v3, best, at);
    _mm256_mask_storeu_epi16(y + ow, m, _mm512_maskz_cvtepi32_epi16(kAll, _mm512_maskz_srli_epi32(kAll, _mm512_castps_si512(best), 16)));
    store_indices(ix + ow, m, at, ow, index0, W);
  }
}
#endif
}  // namespace

bool max_pool_2x2_row(const float* r0, const float* r1, float* y, int64_t* ix, int64_t Wo, int64_t index0, int64_t W) {
#if KILN_X86
  if (cpu_isa() != Isa::avx512) return false;
  row_f32(r0, r1, y, ix, Wo, index0, W);
  return true;
#else
  return false;
#endif
}

bool max_pool_2x2_row(const bfloat16* r0, const bfloat16* r1, bfloat16* y, int64_t* ix, int64_t Wo, int64_t index0,
                      int64_t W) {
#if KILN_X86
  if (cpu_isa() != Isa::avx512) return false;
  row_bf16(r0, r1, y, ix, Wo, index0, W);
  return true;
#else
  return false;
#endif
}

}  // namespace kiln::cpu
