// One fused Adam/AdamW step on contiguous f32 tensors, as CpuBackend::adam_step:
// grad += wd*param (Adam) or param *= 1 - lr*wd (AdamW); m.lerp_(grad, 1-b1);
// v = v*b2 + (1-b2)*g*g; param += -lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps).
// Params: ptr[0..3] = param, grad, exp_avg, exp_avg_sq; i[0] = count, i[1] = decoupled;
// f = decay, wd, 1-b1, b2, 1-b2, -lr/bc1, sqrt(bc2), eps.
#version 460
#include "common.glsl"

layout(local_size_x = 256) in;

void main() {
  uint i = linear_id();
  ParamsRef p = P;
  if (i >= uint(p.i[0])) return;
  F32 pp = F32(p.ptr[0]), gp = F32(p.ptr[1]), mp = F32(p.ptr[2]), vp = F32(p.ptr[3]);
  float w = pp.v[i], g = gp.v[i], m = mp.v[i];
  if (p.i[1] != 0) w = w * p.f[0];
  else g = g + p.f[1] * w;
  float w1 = p.f[2];
  m = w1 < 0.5 ? m + w1 * (g - m) : g - (g - m) * (1.0 - w1);
  float v = vp.v[i] * p.f[3] + p.f[4] * g * g;
  mp.v[i] = m;
  vp.v[i] = v;
  pp.v[i] = w + p.f[5] * m / (sqrt(v) / p.f[6] + p.f[7]);
}
