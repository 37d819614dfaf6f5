// reduce: one output per thread (MODE 0, short reductions) or per work group (MODE 1).
// The host splits dims into kept ("outer") and reduced ("inner") groups, each collapsed.
// Params: ptr[0] = out, ptr[1] = in; i[0] = outputs, i[1] = reduced count, i[2] = outer
// rank, i[3..10] outer sizes, i[11..18] outer in-strides, i[19..26] outer out-strides,
// i[27] = inner rank, i[28..35] inner sizes, i[36..43] inner in-strides; f[0] = correction;
// i[44] = chunks: with more than 1 (MODE 1 only), work group w reduces elements
// [c * i[45], (c + 1) * i[45]) of output w / chunks (c = w % chunks) and writes its partial
// result to element w of out (a contiguous [outputs, chunks] buffer; the host reduces it
// again); f[1] = a factor applied to sums at the store (0: none).
#version 460
#include "common.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 1) const int OP = 0;  // kiln::ReduceOp
layout(constant_id = 2) const int DT_OUT = 0;
layout(constant_id = 3) const int DT_IN = 0;
layout(constant_id = 4) const int MODE = 0;
const int R_SUM = 0, R_MEAN = 1, R_PROD = 2, R_MAX = 3, R_MIN = 4, R_ARGMAX = 5, R_ARGMIN = 6, R_VAR = 7;
const bool INT = DT_IN >= DT_I64 && OP != R_MEAN && OP != R_VAR;
const bool IS_MAX = OP == R_MAX || OP == R_ARGMAX;
const bool EXTREME = OP >= R_MAX && OP <= R_ARGMIN;

shared float sf[256];
shared int64_t si[256];
shared uint sx[256];

ParamsRef p;
uint inner_off(uint j) {
  int nd = p.i[27];
  if (nd == 1) return j * uint(p.i[36]);
  uint off = 0;
  for (int d = nd - 1; d >= 0; --d) {
    uint s = uint(p.i[28 + d]);
    off += (j % s) * uint(p.i[36 + d]);
    j /= s;
  }
  return off;
}

// Does (v, vi) win over (cur, ci)? Larger (smaller) value, the first NaN, ties to the lower index.
bool better_f(float v, uint vi, float cur, uint ci) {
  bool vn = isnan(v), cn = isnan(cur);
  if (vn || cn) return vn && (!cn || vi < ci);
  if (v == cur) return vi < ci;
  return IS_MAX ? v > cur : v < cur;
}
bool better_i(int64_t v, uint vi, int64_t cur, uint ci) {
  if (v == cur) return vi < ci;
  return IS_MAX ? v > cur : v < cur;
}

void main() {
  p = P;
  uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  uint chunks = MODE == 1 ? uint(max(p.i[44], 1)) : 1u;
  uint out_id = MODE == 1 ? wg / chunks : linear_id();
  uint tid = MODE == 1 ? gl_LocalInvocationID.x : 0;
  uint nthreads = MODE == 1 ? gl_WorkGroupSize.x : 1;
  bool live = out_id < uint(p.i[0]);
  uint n = uint(p.i[1]);
  uint j0 = 0, j1 = n;
  if (chunks > 1u) {
    j0 = (wg % chunks) * uint(p.i[45]);
    j1 = min(n, j0 + uint(p.i[45]));
  }
  uint in_base = 0, out_off = 0;
  if (live) {
    uint rem = out_id;
    for (int d = p.i[2] - 1; d >= 0; --d) {
      uint s = uint(p.i[3 + d]);
      uint idx = rem % s;
      rem /= s;
      in_base += idx * uint(p.i[11 + d]);
      out_off += idx * uint(p.i[19 + d]);
    }
  }
  uint64_t src = p.ptr[1];
  float af = (OP == R_PROD) ? 1.0 : 0.0;
  int64_t ai = (OP == R_PROD) ? 1 : 0;
  uint ax = 0xffffffffu;
  bool have = false;
  if (live) {
    for (uint j = j0 + tid; j < j1; j += nthreads) {
      uint o = in_base + inner_off(j);
      if (INT) {
        int64_t x = load_i(src, DT_IN, o);
        if (OP == R_SUM) ai += x;
        else if (OP == R_PROD) ai *= x;
        else if (!have || better_i(x, j, ai, ax)) { ai = x; ax = j; }
      } else {
        float x = load_f(src, DT_IN, o);
        if (OP == R_SUM || OP == R_MEAN || OP == R_VAR) af += x;
        else if (OP == R_PROD) af *= x;
        else if (!have || better_f(x, j, af, ax)) { af = x; ax = j; }
      }
      have = true;
    }
  }
  // combine the threads of a work group
  if (MODE == 1) {
    sf[tid] = af; si[tid] = ai; sx[tid] = have ? ax : 0xffffffffu;
    barrier();
    for (uint s = nthreads / 2; s > 0; s >>= 1) {
      if (tid < s) {
        uint bx = sx[tid + s];
        if (OP == R_SUM || OP == R_MEAN || OP == R_VAR) { if (INT) si[tid] += si[tid + s]; else sf[tid] += sf[tid + s]; }
        else if (OP == R_PROD) { if (INT) si[tid] *= si[tid + s]; else sf[tid] *= sf[tid + s]; }
        else if (bx != 0xffffffffu) {
          bool take = sx[tid] == 0xffffffffu ||
                      (INT ? better_i(si[tid + s], bx, si[tid], sx[tid]) : better_f(sf[tid + s], bx, sf[tid], sx[tid]));
          if (take) { sf[tid] = sf[tid + s]; si[tid] = si[tid + s]; sx[tid] = bx; }
        }
      }
      barrier();
    }
    af = sf[0]; ai = si[0]; ax = sx[0];
  }
  if (OP == R_VAR) {  // second pass: squared deviations from the mean
    float mean = af / float(n);
    float sq = 0.0;
    if (live)
      for (uint j = tid; j < n; j += nthreads) {
        float d = load_f(src, DT_IN, in_base + inner_off(j)) - mean;
        sq += d * d;
      }
    if (MODE == 1) {
      barrier();
      sf[tid] = sq;
      barrier();
      for (uint s = nthreads / 2; s > 0; s >>= 1) {
        if (tid < s) sf[tid] += sf[tid + s];
        barrier();
      }
      sq = sf[0];
    }
    af = sq / max(float(n) - p.f[0], 0.0);
  }
  if (!live || tid != 0) return;
  uint64_t dst = p.ptr[0];
  if (chunks > 1u) out_off = wg;
  if (p.f[1] != 0.0) af *= p.f[1];
  if (OP == R_ARGMAX || OP == R_ARGMIN) store_i(dst, DT_OUT, out_off, int64_t(ax == 0xffffffffu ? 0u : ax));
  else if (OP == R_MEAN) store_f(dst, DT_OUT, out_off, af / float(n));
  else if (INT) store_i(dst, DT_OUT, out_off, ai);
  else store_f(dst, DT_OUT, out_off, af);
}
