// Tiled GEMM, C[M, N] = A[M, K] @ B[K, N] in f32, through shared memory: a BM x BN tile per
// work group, BK-deep slices of A and B staged in shared memory, TM x TN outputs per thread.
// The operands are views picked by MODE, so conv2d runs as an implicit GEMM (no im2col
// buffer):
//  0 matmul: strided A, B, C; work group z walks the (collapsed) batch dims.
//  1 conv2d forward: A = weight [Cout/g, Cin/g*kh*kw], B = im2col(in) [.., N*Ho*Wo],
//    C -> out (NCHW) + bias; z = group.
//  2 conv2d backward input: A = weight^T [Cin/g, Cout/g*kh*kw], B = the grad_out positions
//    each input position feeds, C -> grad_in; z = group.
//  3 conv2d backward weight: A = grad_out [Cout/g, N*Ho*Wo], B = im2col(in)^T, C -> partial
//    grad_weight of K-split z % splits (summed by the host when splits > 1); z / splits = group.
// Params: ptr[0] = C, ptr[1] = A source, ptr[2] = B source, ptr[3] = bias; i[0..2] = M, N, K;
// matmul: i[3..8] = A (m, k), B (k, n), C (m, n) strides, i[9] = batch rank (<= 4),
// i[10..13] batch sizes, i[14..17] / i[18..21] / i[22..25] A / B / C batch strides;
// conv: i[10..25] = N, Cin, H, W, Cout, Ho, Wo, kh, kw, sh, sw, ph, pw, dh, dw, groups,
// i[26] = has bias, i[27] = K per split, i[28] = splits.
// DT (A, B, bias) and OUT_DT (C) are f32, f16 or bf16 (DType codes); 16-bit values are
// converted in registers and accumulated in f32, so only 16-bit storage is needed.
#version 460
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int MODE = 0;
layout(constant_id = 2) const int BM = 64;
layout(constant_id = 3) const int BN = 64;
layout(constant_id = 4) const int BK = 16;
layout(constant_id = 5) const int TM = 4;
layout(constant_id = 6) const int TN = 4;
layout(constant_id = 7) const int DT = DT_F32;
layout(constant_id = 8) const int OUT_DT = DT_F32;
const int ES = DT == DT_F32 ? 4 : 2, OUT_ES = OUT_DT == DT_F32 ? 4 : 2;  // bytes per element

float ld(uint64_t a, uint i) {
  if (DT == DT_F32) return F32(a).v[i];
  if (DT == DT_F16) return unpackHalf2x16(uint(B16(a).v[i])).x;
  return uintBitsToFloat(uint(B16(a).v[i]) << 16);
}
void st(uint64_t a, uint i, float x) {
  if (OUT_DT == DT_F32) F32(a).v[i] = x;
  else store_fp(a, OUT_DT, i, x);
}

shared float As[BK * BM];
shared float Bs[BK * BN];

ParamsRef p;
uint64_t pa, pb, pc;
int M, N, K, grp;
// conv geometry
int Ni, Ci, H, W, Co, Ho, Wo, KH, KW, SH, SW, PH, PW, DH, DW, G, Cig, Cog;

float load_a(int m, int k) {
  if (m >= M || k >= K) return 0.0;
  if (MODE == 0) return ld(pa, uint(m * p.i[3] + k * p.i[4]));
  if (MODE == 1) return ld(pa, uint((grp * Cog + m) * K + k));
  if (MODE == 2) {  // weight[g*Cog + co, m, ky, kx], k = (co, ky, kx)
    int khw = KH * KW, co = k / khw, r = k % khw;
    return ld(pa, uint(((grp * Cog + co) * Cig + m) * khw + r));
  }
  int hw = Ho * Wo, img = k / hw, r = k % hw;  // MODE 3: grad_out[img, g*Cog + m, r]
  return ld(pa, uint((img * Co + grp * Cog + m) * hw + r));
}
float im2col(int img, int ci, int oh, int ow, int ky, int kx) {
  int ih = oh * SH - PH + ky * DH, iw = ow * SW - PW + kx * DW;
  if (ih < 0 || ih >= H || iw < 0 || iw >= W) return 0.0;
  return ld(pb, uint(((img * Ci + grp * Cig + ci) * H + ih) * W + iw));
}
float load_b(int k, int n) {
  if (k >= K || n >= N) return 0.0;
  if (MODE == 0) return ld(pb, uint(k * p.i[5] + n * p.i[6]));
  int khw = KH * KW;
  if (MODE == 1) {  // k = (ci, ky, kx), n = (img, oh, ow)
    int ci = k / khw, r = k % khw, hw = Ho * Wo, img = n / hw, q = n % hw;
    return im2col(img, ci, q / Wo, q % Wo, r / KW, r % KW);
  }
  if (MODE == 2) {  // k = (co, ky, kx), n = (img, h, w): grad_out[img, co, oh, ow] when it reads (h, w)
    int co = k / khw, r = k % khw, ky = r / KW, kx = r % KW, hw = H * W, img = n / hw, q = n % hw;
    int th = q / W + PH - ky * DH, tw = q % W + PW - kx * DW;
    if (th < 0 || tw < 0 || th % SH != 0 || tw % SW != 0) return 0.0;
    int oh = th / SH, ow = tw / SW;
    if (oh >= Ho || ow >= Wo) return 0.0;
    return ld(pb, uint(((img * Co + grp * Cog + co) * Ho + oh) * Wo + ow));
  }
  // MODE 3: k = (img, oh, ow), n = (ci, ky, kx)
  int hw = Ho * Wo, img = k / hw, q = k % hw, ci = n / khw, r = n % khw;
  return im2col(img, ci, q / Wo, q % Wo, r / KW, r % KW);
}
void store_c(int m, int n, float v) {
  if (MODE == 0) { st(pc, uint(m * p.i[7] + n * p.i[8]), v); return; }
  if (MODE == 1) {
    int hw = Ho * Wo, img = n / hw, q = n % hw, co = grp * Cog + m;
    if (p.i[26] != 0) v += ld(p.ptr[3], uint(co));
    st(pc, uint((img * Co + co) * hw + q), v);
    return;
  }
  if (MODE == 2) {
    int hw = H * W, img = n / hw, q = n % hw;
    st(pc, uint((img * Ci + grp * Cig + m) * hw + q), v);
    return;
  }
  st(pc, uint((grp * Cog + m) * N + n), v);
}

void main() {
  p = P;
  M = p.i[0]; N = p.i[1]; K = p.i[2];
  pa = p.ptr[1]; pb = p.ptr[2]; pc = p.ptr[0];
  int k_begin = 0, k_end = K;
  grp = 0;
  uint z = gl_WorkGroupID.z;
  if (MODE == 0) {
    uint rem = z;
    for (int d = p.i[9] - 1; d >= 0; --d) {
      uint s = uint(p.i[10 + d]), c = rem % s;
      rem /= s;
      pa += uint64_t(c * uint(p.i[14 + d])) * ES;
      pb += uint64_t(c * uint(p.i[18 + d])) * ES;
      pc += uint64_t(c * uint(p.i[22 + d])) * OUT_ES;
    }
  } else {
    Ni = p.i[10]; Ci = p.i[11]; H = p.i[12]; W = p.i[13]; Co = p.i[14]; Ho = p.i[15]; Wo = p.i[16];
    KH = p.i[17]; KW = p.i[18]; SH = p.i[19]; SW = p.i[20]; PH = p.i[21]; PW = p.i[22]; DH = p.i[23]; DW = p.i[24];
    G = p.i[25]; Cig = Ci / G; Cog = Co / G;
    if (MODE == 3) {
      int splits = p.i[28], split = int(z) % splits;
      grp = int(z) / splits;
      k_begin = split * p.i[27];
      k_end = min(K, k_begin + p.i[27]);
      pc += uint64_t(uint(split) * uint(Co * N)) * OUT_ES;
    } else {
      grp = int(z);
    }
  }
  const int NT = (BM / TM) * (BN / TN), TX = BN / TN, TY = BM / TM;
  int tid = int(gl_LocalInvocationID.x);
  int tn = tid % TX, tm = tid / TX;
  int m0 = int(gl_WorkGroupID.y) * BM, n0 = int(gl_WorkGroupID.x) * BN;
  float acc[TM * TN];
  for (int i = 0; i < TM * TN; ++i) acc[i] = 0.0;
  bool a_k_fast = MODE != 0 || p.i[4] == 1 || p.i[3] != 1;
  bool b_n_fast = MODE != 0 || p.i[6] == 1;
  int saved_k = K;
  K = k_end;  // loads treat k >= k_end as zero
  for (int k0 = k_begin; k0 < k_end; k0 += BK) {
    for (int e = tid; e < BM * BK; e += NT) {
      int mm = a_k_fast ? e / BK : e % BM, kk = a_k_fast ? e % BK : e / BM;
      As[kk * BM + mm] = load_a(m0 + mm, k0 + kk);
    }
    for (int e = tid; e < BK * BN; e += NT) {
      int kk = b_n_fast ? e / BN : e % BK, nn = b_n_fast ? e % BN : e / BK;
      Bs[kk * BN + nn] = load_b(k0 + kk, n0 + nn);
    }
    barrier();
    for (int kk = 0; kk < BK; ++kk) {
      float a[TM], b[TN];
      for (int i = 0; i < TM; ++i) a[i] = As[kk * BM + tm + i * TY];
      for (int j = 0; j < TN; ++j) b[j] = Bs[kk * BN + tn + j * TX];
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i * TN + j] = fma(a[i], b[j], acc[i * TN + j]);
    }
    barrier();
  }
  K = saved_k;
  for (int i = 0; i < TM; ++i) {
    int m = m0 + tm + i * TY;
    if (m >= M) continue;
    for (int j = 0; j < TN; ++j) {
      int n = n0 + tn + j * TX;
      if (n < N) store_c(m, n, acc[i * TN + j]);
    }
  }
}
