#include "backends/cpu/small_matmul.h"

#include <omp.h>

#include <algorithm>

namespace kiln::cpu {

namespace {

constexpr int64_t kMaxRows = 4;               // above this oneDNN's packed kernels win
constexpr int64_t kParallelWork = 1 << 16;    // multiply-adds below which one thread is faster

// One output element per (m, n): dot products along contiguous rows of both
// operands, four columns at a time so that four accumulator chains hide the FMA
// latency and each load of A serves four products.
__attribute__((target_clones("avx512f", "avx2", "default"))) void dot_rows(const float* A, int64_t lda,
                                                                           const float* Bt, int64_t ldb, float* C,
                                                                           int64_t ldc, int64_t M, int64_t n0,
                                                                           int64_t n1, int64_t K) {
  for (int64_t m = 0; m < M; ++m) {
    const float* a = A + m * lda;
    int64_t n = n0;
    for (; n + 4 <= n1; n += 4) {
      const float *b0 = Bt + n * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
      for (int64_t k = 0; k < K; ++k) {
        const float x = a[k];
        s0 += x * b0[k];
        s1 += x * b1[k];
        s2 += x * b2[k];
        s3 += x * b3[k];
      }
      C[m * ldc + n] = s0;
      C[m * ldc + n + 1] = s1;
      C[m * ldc + n + 2] = s2;
      C[m * ldc + n + 3] = s3;
    }
    for (; n < n1; ++n) {
      const float* b = Bt + n * ldb;
      float acc = 0;
#pragma omp simd reduction(+ : acc)
      for (int64_t k = 0; k < K; ++k) acc += a[k] * b[k];
      C[m * ldc + n] = acc;
    }
  }
}

// Row-major B: C[m, n0:n1] = sum_k A[m, k] * B[k, n0:n1], vectorized along n.
__attribute__((target_clones("avx512f", "avx2", "default"))) void axpy_rows(const float* A, int64_t lda,
                                                                            const float* B, int64_t ldb, float* C,
                                                                            int64_t ldc, int64_t M, int64_t n0,
                                                                            int64_t n1, int64_t K) {
  for (int64_t m = 0; m < M; ++m) {
    float* c = C + m * ldc;
    std::fill(c + n0, c + n1, 0.0f);
    for (int64_t k = 0; k < K; ++k) {
      const float a = A[m * lda + k];
      const float* b = B + k * ldb;
#pragma omp simd
      for (int64_t n = n0; n < n1; ++n) c[n] += a * b[n];
    }
  }
}

}  // namespace

bool small_matmul_f32(const float* A, int64_t lda, const float* B, int64_t bk, int64_t bn, float* C, int64_t ldc,
                      int64_t M, int64_t N, int64_t K) {
  if (M > kMaxRows || (bk != 1 && bn != 1)) return false;
  const bool transposed = bk == 1;
  auto run = [&](int64_t n0, int64_t n1) {
    if (transposed)
      dot_rows(A, lda, B, bn, C, ldc, M, n0, n1, K);
    else
      axpy_rows(A, lda, B, bk, C, ldc, M, n0, n1, K);
  };
  if (M * N * K < kParallelWork) {
    run(0, N);
    return true;
  }
#pragma omp parallel
  {
    // Split N in contiguous blocks of 16 (one AVX-512 vector of outputs).
    int threads = omp_get_num_threads(), t = omp_get_thread_num();
    int64_t blocks = (N + 15) / 16;
    int64_t b0 = blocks * t / threads, b1 = blocks * (t + 1) / threads;
    run(std::min(N, b0 * 16), std::min(N, b1 * 16));
  }
  return true;
}

}  // namespace kiln::cpu
