// Fast f32 matmul for dense operands whose contiguous dims are multiples of 4 and whose
// addresses are 16-byte aligned: C[M, N] = A[M, K] @ B[K, N], A stored [M, K] or, with
// TRANS_A, [K, M]; B stored [K, N] or, with TRANS_B, [N, K]; C stored [M, N].
// 128 x 128 tiles, BK-deep slices double-buffered in shared memory (one barrier per
// slice), 256 threads with 8 x 8 outputs each as four 4 x 4 blocks (rows ty*4 and
// 64 + ty*4, columns tx*4 and 64 + tx*4), vec4 loads and stores; the tile sizes are
// compile-time constants so that the compiler keeps the accumulators in registers.
// Params as gemm.comp's matmul (MODE 0): ptr[0] = C, ptr[1] = A, ptr[2] = B; i[0..2] = M,
// N, K; i[9] = batch rank, i[10..13] batch sizes, i[14..25] A / B / C batch strides.
#include "common.glsl"

layout(buffer_reference, std430, buffer_reference_align = 16) buffer V4 { vec4 v[]; };
layout(local_size_x = 256) in;
layout(constant_id = 1) const bool TRANS_A = false;
layout(constant_id = 2) const bool TRANS_B = false;

#define BM 128
#define BN 128
#define NLOAD (BK / 8)  // vec4 loads per thread per operand and slice

shared vec4 As[2][BK][BM / 4];
shared vec4 Bs[2][BK][BN / 4];

uint64_t pa, pb, pc;
int M, N, K, tid;
vec4 ra[NLOAD], rb[NLOAD];

void load_global(int m0, int n0, int k0) {
  for (int l = 0; l < NLOAD; ++l) {
    int e = tid + l * 256;
    if (!TRANS_A) {  // [M, K]: a row segment of 4 k
      int m = m0 + e / (BK / 4), k = k0 + (e % (BK / 4)) * 4;
      ra[l] = (m < M && k < K) ? V4(pa).v[(uint(m) * uint(K) + uint(k)) >> 2] : vec4(0.0);
    } else {  // [K, M]: 4 consecutive m of one k
      int k = k0 + e / (BM / 4), m = m0 + (e % (BM / 4)) * 4;
      ra[l] = (m < M && k < K) ? V4(pa).v[(uint(k) * uint(M) + uint(m)) >> 2] : vec4(0.0);
    }
    if (!TRANS_B) {  // [K, N]
      int k = k0 + e / (BN / 4), n = n0 + (e % (BN / 4)) * 4;
      rb[l] = (n < N && k < K) ? V4(pb).v[(uint(k) * uint(N) + uint(n)) >> 2] : vec4(0.0);
    } else {  // [N, K]
      int n = n0 + e / (BK / 4), k = k0 + (e % (BK / 4)) * 4;
      rb[l] = (n < N && k < K) ? V4(pb).v[(uint(n) * uint(K) + uint(k)) >> 2] : vec4(0.0);
    }
  }
}

void store_shared(int buf) {
  for (int l = 0; l < NLOAD; ++l) {
    int e = tid + l * 256;
    if (!TRANS_A) {
      int m = e / (BK / 4), k = (e % (BK / 4)) * 4;
      for (int i = 0; i < 4; ++i) As[buf][k + i][m >> 2][m & 3] = ra[l][i];
    } else {
      As[buf][e / (BM / 4)][e % (BM / 4)] = ra[l];
    }
    if (!TRANS_B) {
      Bs[buf][e / (BN / 4)][e % (BN / 4)] = rb[l];
    } else {
      int n = e / (BK / 4), k = (e % (BK / 4)) * 4;
      for (int i = 0; i < 4; ++i) Bs[buf][k + i][n >> 2][n & 3] = rb[l][i];
    }
  }
}

void main() {
  ParamsRef p = P;
  M = p.i[0]; N = p.i[1]; K = p.i[2];
  pa = p.ptr[1]; pb = p.ptr[2]; pc = p.ptr[0];
  uint rem = gl_WorkGroupID.z;
  for (int d = p.i[9] - 1; d >= 0; --d) {
    uint s = uint(p.i[10 + d]), c = rem % s;
    rem /= s;
    pa += uint64_t(c * uint(p.i[14 + d])) * 4;
    pb += uint64_t(c * uint(p.i[18 + d])) * 4;
    pc += uint64_t(c * uint(p.i[22 + d])) * 4;
  }
  tid = int(gl_LocalInvocationID.x);
  const int tx = tid % 16, ty = tid / 16;
  const int m0 = int(gl_WorkGroupID.y) * BM, n0 = int(gl_WorkGroupID.x) * BN;
  vec4 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = vec4(0.0);

  load_global(m0, n0, 0);
  store_shared(0);
  barrier();
  int cur = 0;
  for (int k0 = 0; k0 < K; k0 += BK) {
    const bool next = k0 + BK < K;
    if (next) load_global(m0, n0, k0 + BK);
    for (int kk = 0; kk < BK; ++kk) {
      vec4 a0 = As[cur][kk][ty], a1 = As[cur][kk][16 + ty];
      vec4 b0 = Bs[cur][kk][tx], b1 = Bs[cur][kk][16 + tx];
      for (int i = 0; i < 4; ++i) {
        acc[i * 2] = fma(vec4(a0[i]), b0, acc[i * 2]);
        acc[i * 2 + 1] = fma(vec4(a0[i]), b1, acc[i * 2 + 1]);
        acc[8 + i * 2] = fma(vec4(a1[i]), b0, acc[8 + i * 2]);
        acc[8 + i * 2 + 1] = fma(vec4(a1[i]), b1, acc[8 + i * 2 + 1]);
      }
    }
    if (next) store_shared(cur ^ 1);
    barrier();
    cur ^= 1;
  }
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i) {
      int m = m0 + h * 64 + ty * 4 + i;
      if (m >= M) continue;
      for (int c = 0; c < 2; ++c) {
        int n = n0 + c * 64 + tx * 4;
        if (n < N) V4(pc).v[(uint(m) * uint(N) + uint(n)) >> 2] = acc[h * 8 + i * 2 + c];
      }
    }
}
