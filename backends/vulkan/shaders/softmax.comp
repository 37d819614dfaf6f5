// softmax / log_softmax forward and backward along one dim of a contiguous tensor:
// rows of `len` elements `inner` apart. One row per thread (MODE 0) or per group (MODE 1).
// Params: ptr[0] = out (fwd) / grad_in (bwd), ptr[1] = in (fwd) / grad_out (bwd),
// ptr[2] = out of the forward (bwd); i[0] = rows, i[1] = len, i[2] = inner.
#version 460
#include "common.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 1) const int BACKWARD = 0;
layout(constant_id = 2) const int LOG = 0;
layout(constant_id = 3) const int DT = 0;
layout(constant_id = 4) const int MODE = 0;

shared float sh[256];

float group_combine(float v, bool is_max) {
  if (MODE == 0) return v;
  uint tid = gl_LocalInvocationID.x;
  barrier();
  sh[tid] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
    if (tid < s) {
      float o = sh[tid + s];
      sh[tid] = is_max ? ((o > sh[tid] || isnan(o)) ? o : sh[tid]) : sh[tid] + o;
    }
    barrier();
  }
  return sh[0];
}

void main() {
  ParamsRef p = P;
  uint row = MODE == 1 ? gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x : linear_id();
  uint tid = MODE == 1 ? gl_LocalInvocationID.x : 0;
  uint step = MODE == 1 ? gl_WorkGroupSize.x : 1;
  bool live = row < uint(p.i[0]);
  uint len = uint(p.i[1]), inner = uint(p.i[2]);
  uint base = live ? (row / inner) * len * inner + row % inner : 0;
  uint n = live ? len : 0;
  uint64_t dst = p.ptr[0], a = p.ptr[1], y = p.ptr[2];
  if (BACKWARD == 0) {
    float m = uintBitsToFloat(0xff800000u);
    for (uint k = tid; k < n; k += step) {
      float x = load_f(a, DT, base + k * inner);
      m = (x > m || isnan(x)) ? x : m;
    }
    m = group_combine(m, true);
    float s = 0.0;
    for (uint k = tid; k < n; k += step) s += exp(load_f(a, DT, base + k * inner) - m);
    s = group_combine(s, false);
    float ls = log(s);
    for (uint k = tid; k < n; k += step) {
      float x = load_f(a, DT, base + k * inner) - m;
      store_f(dst, DT, base + k * inner, LOG == 1 ? x - ls : exp(x) / s);
    }
  } else {
    float s = 0.0;  // sum(g * y) for softmax, sum(g) for log_softmax
    for (uint k = tid; k < n; k += step) {
      float g = load_f(a, DT, base + k * inner);
      s += LOG == 1 ? g : g * load_f(y, DT, base + k * inner);
    }
    s = group_combine(s, false);
    for (uint k = tid; k < n; k += step) {
      uint o = base + k * inner;
      float g = load_f(a, DT, o), yo = load_f(y, DT, o);
      store_f(dst, DT, o, LOG == 1 ? g - exp(yo) * s : yo * (g - s));
    }
  }
}
