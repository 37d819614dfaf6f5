// Matmul on the tensor cores through cooperative matrices (GL_NV_cooperative_matrix; see
// vk_ops_gemm.cpp for why not the KHR spelling): C[M, N] = A[M, K] @ B[K, N], f16 operands
// (or f32 rounded to f16 when reduced precision is allowed), f32 accumulation, C in f32 or
// f16. A 256-thread work group (8 subgroups of 32) computes a 128 x 128 tile of C; each
// subgroup a 64 x 32 part of it as (64 / LM) x (32 / LN) accumulators of the LM x LN x LK
// shape the device lists (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV). 32-deep K
// slices of A and B are staged in shared memory as f16 (uvec4 = 8 halves, the layout of
// NVIDIA's vk_cooperative_matrix_perf sample), read from memory 8 halves at a time where the
// host found the operand contiguous and aligned (i[26] / i[27]), else element by element
// with any strides; the next slice is read into registers while the current one is
// multiplied. Results go through a per-subgroup staging tile so that edges and any C
// strides are handled.
// Params as gemm.comp mode 0: ptr[0] = C, ptr[1] = A, ptr[2] = B; i[0..2] = M, N, K;
// i[3..8] = A (m, k), B (k, n), C (m, n) strides; i[9] = batch rank, i[10..25] batch sizes
// and strides; i[26] = A vector loads (1: k-contiguous rows), i[27] = B vector loads
// (1: n-contiguous rows).
#version 460
#include "common.glsl"
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint LM = 16;
layout(constant_id = 2) const uint LN = 8;
layout(constant_id = 3) const uint LK = 16;
layout(constant_id = 4) const int IN_DT = DT_F16;
layout(constant_id = 5) const int OUT_DT = DT_F32;

const uint BM = 128, BN = 128, BK = 32, WM = 64, WN = 32;
// Shared tiles as uvec4 (8 halves): rows padded by one uvec4 against bank conflicts.
const uint SA4 = BK / 8 + 1, SB4 = BN / 8 + 1;
const uint RM = WM / LM, RN = WN / LN;
const int IN_ES = IN_DT == DT_F32 ? 4 : 2, OUT_ES = OUT_DT == DT_F32 ? 4 : 2;

layout(buffer_reference, std430, buffer_reference_align = 16) buffer V4 { uvec4 v[]; };

shared uvec4 shA[BM * SA4];
shared uvec4 shB[BK * SB4];
shared float stage[8 * 256];

float ld(uint64_t a, uint i) {
  if (IN_DT == DT_F32) return F32(a).v[i];
  return unpackHalf2x16(uint(B16(a).v[i])).x;
}

uint64_t pa, pb;
int M, N, K, sam, sak, sbk, sbn;
bool va, vb;

// 8 halves of A: row m, columns k .. k+7 (zero beyond the edges).
uvec4 load_a8(int m, int k) {
  if (va && m < M && k + 8 <= K) return V4(pa).v[uint(m * sam + k) / 8];
  float x[8];
  for (int j = 0; j < 8; ++j) x[j] = (m < M && k + j < K) ? ld(pa, uint(m * sam + (k + j) * sak)) : 0.0;
  return uvec4(packHalf2x16(vec2(x[0], x[1])), packHalf2x16(vec2(x[2], x[3])), packHalf2x16(vec2(x[4], x[5])),
               packHalf2x16(vec2(x[6], x[7])));
}
// 8 halves of B: row k, columns n .. n+7.
uvec4 load_b8(int k, int n) {
  if (vb && k < K && n + 8 <= N) return V4(pb).v[uint(k * sbk + n) / 8];
  float x[8];
  for (int j = 0; j < 8; ++j) x[j] = (k < K && n + j < N) ? ld(pb, uint(k * sbk + (n + j) * sbn)) : 0.0;
  return uvec4(packHalf2x16(vec2(x[0], x[1])), packHalf2x16(vec2(x[2], x[3])), packHalf2x16(vec2(x[4], x[5])),
               packHalf2x16(vec2(x[6], x[7])));
}

const uint LOADS = BM * BK / 8 / 256;  // uvec4 of A (and of B) per thread per K slice

void main() {
  ParamsRef p = P;
  M = p.i[0]; N = p.i[1]; K = p.i[2];
  sam = p.i[3]; sak = p.i[4]; sbk = p.i[5]; sbn = p.i[6];
  const int scm = p.i[7], scn = p.i[8];
  pa = p.ptr[1]; pb = p.ptr[2];
  uint64_t pc = p.ptr[0];
  uint rem = gl_WorkGroupID.z;
  for (int d = p.i[9] - 1; d >= 0; --d) {
    uint s = uint(p.i[10 + d]), c = rem % s;
    rem /= s;
    pa += uint64_t(c * uint(p.i[14 + d])) * IN_ES;
    pb += uint64_t(c * uint(p.i[18 + d])) * IN_ES;
    pc += uint64_t(c * uint(p.i[22 + d])) * OUT_ES;
  }
  va = p.i[26] != 0;
  vb = p.i[27] != 0;
  const uint tid = gl_LocalInvocationID.x, warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint wm = warp / 4, wn = warp % 4;
  const int m0 = int(gl_WorkGroupID.y * BM), n0 = int(gl_WorkGroupID.x * BN);

  fcoopmatNV<32, gl_ScopeSubgroup, LM, LN> acc[RM * RN];
  for (uint r = 0; r < RM * RN; ++r) acc[r] = fcoopmatNV<32, gl_ScopeSubgroup, LM, LN>(0.0);
  fcoopmatNV<16, gl_ScopeSubgroup, LM, LK> am[RM];
  fcoopmatNV<16, gl_ScopeSubgroup, LK, LN> bm;

  // The next K slice is read into registers while the current one is multiplied.
  uvec4 ra[LOADS], rb[LOADS];
  for (uint l = 0; l < LOADS; ++l) {
    const uint e = tid + l * 256;
    ra[l] = load_a8(m0 + int(e / (BK / 8)), int((e % (BK / 8)) * 8));
    rb[l] = load_b8(int(e / (BN / 8)), n0 + int((e % (BN / 8)) * 8));
  }
  for (int k0 = 0; k0 < K; k0 += int(BK)) {
    barrier();  // the previous slice is no longer read
    for (uint l = 0; l < LOADS; ++l) {
      const uint e = tid + l * 256;
      shA[(e / (BK / 8)) * SA4 + e % (BK / 8)] = ra[l];
      shB[(e / (BN / 8)) * SB4 + e % (BN / 8)] = rb[l];
    }
    barrier();
    if (k0 + int(BK) < K) {
      for (uint l = 0; l < LOADS; ++l) {
        const uint e = tid + l * 256;
        ra[l] = load_a8(m0 + int(e / (BK / 8)), k0 + int(BK) + int((e % (BK / 8)) * 8));
        rb[l] = load_b8(k0 + int(BK) + int(e / (BN / 8)), n0 + int((e % (BN / 8)) * 8));
      }
    }
    for (uint kk = 0; kk < BK; kk += LK) {
      for (uint i = 0; i < RM; ++i) coopMatLoadNV(am[i], shA, (wm * WM + i * LM) * SA4 + kk / 8, SA4, false);
      for (uint j = 0; j < RN; ++j) {
        coopMatLoadNV(bm, shB, kk * SB4 + (wn * WN + j * LN) / 8, SB4, false);
        for (uint i = 0; i < RM; ++i) acc[i * RN + j] = coopMatMulAddNV(am[i], bm, acc[i * RN + j]);
      }
    }
  }

  // epilogue: each accumulator through this subgroup's staging tile, then to C
  const uint base = warp * 256;
  for (uint r = 0; r < RM * RN; ++r) {
    const int rm = m0 + int(wm * WM + (r / RN) * LM), rn = n0 + int(wn * WN + (r % RN) * LN);
    if (rm >= M || rn >= N) continue;  // uniform across the subgroup
    coopMatStoreNV(acc[r], stage, base, LN, false);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    for (uint e = lane; e < LM * LN; e += gl_SubgroupSize) {
      const int m = rm + int(e / LN), n = rn + int(e % LN);
      if (m < M && n < N) {
        const uint o = uint(m * scm + n * scn);
        if (OUT_DT == DT_F32) F32(pc).v[o] = stage[base + e];
        else store_fp(pc, OUT_DT, o, stage[base + e]);
      }
    }
    subgroupBarrier();
  }
}
