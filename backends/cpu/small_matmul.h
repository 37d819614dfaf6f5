// Internal to the CPU backend: f32 matmul for a handful of rows (inference on one
// or a few samples). oneDNN's matmul packs the whole weight matrix on every call,
// which costs more than the product itself when M is tiny; these loops read the
// weights once, in their stored order.
#pragma once
#include <cstdint>

namespace kiln::cpu {

// C[m, n] = sum_k A[m*lda + k] * B[k*bk + n*bn] for m < M, n < N, with unit
// column strides for A and C and either bk == 1 (B stored transposed, as a
// Linear layer's weight) or bn == 1 (B row-major). Returns false, doing nothing,
// for any other layout or when M is too large for this path to pay.
bool small_matmul_f32(const float* A, int64_t lda, const float* B, int64_t bk, int64_t bn, float* C, int64_t ldc,
                      int64_t M, int64_t N, int64_t K);

}  // namespace kiln::cpu
