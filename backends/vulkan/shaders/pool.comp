// 2-d pooling on contiguous NCHW tensors (PyTorch's max_pool2d / avg_pool2d).
// KIND 0 max forward (thread per output), 1 max backward (thread per output, atomic add
// into a zeroed grad_in), 2 avg forward (per output), 3 avg backward (per input, gathers).
// Params: ptr[0] = out / grad_in, ptr[1] = indices (max) / grad_out (avg bwd) / in (avg fwd),
// ptr[2] = in (max fwd) / grad_out (max bwd); i[0] = planes N*C, i[1] = H, i[2] = W,
// i[3] = Ho, i[4] = Wo, i[5..6] kernel, i[7..8] stride, i[9..10] padding, i[11..12] dilation,
// i[13] = count_include_pad, i[14] = threads.
#version 460
#include "common.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 1) const int KIND = 0;
layout(constant_id = 2) const int DT = 0;

void atomic_add_f32(uint64_t a, uint i, float v) {
  B32 b = B32(a);
  uint old = b.v[i], assumed;
  do {
    assumed = old;
    old = atomicCompSwap(b.v[i], assumed, floatBitsToUint(uintBitsToFloat(assumed) + v));
  } while (old != assumed);
}

void main() {
  ParamsRef p = P;
  uint gid = linear_id();
  if (gid >= uint(p.i[14])) return;
  int H = p.i[1], W = p.i[2], Ho = p.i[3], Wo = p.i[4];
  int kh = p.i[5], kw = p.i[6], sh = p.i[7], sw = p.i[8], ph = p.i[9], pw = p.i[10], dh = p.i[11], dw = p.i[12];
  if (KIND == 0 || KIND == 2 || KIND == 1) {
    uint plane = gid / uint(Ho * Wo);
    int oh = int(gid % uint(Ho * Wo)) / Wo, ow = int(gid % uint(Ho * Wo)) % Wo;
    if (KIND == 1) {
      int64_t idx = int64_t(B64(p.ptr[1]).v[gid]);
      float g = load_f(p.ptr[2], DT, gid);
      if (idx >= 0 && idx < int64_t(H * W)) atomic_add_f32(p.ptr[0], plane * uint(H * W) + uint(idx), g);
      return;
    }
    uint64_t src = KIND == 0 ? p.ptr[2] : p.ptr[1];
    uint pbase = plane * uint(H * W);
    if (KIND == 0) {
      float best = uintBitsToFloat(0xff800000u);
      int bi = -1;
      for (int y = 0; y < kh; ++y) {
        int ih = oh * sh - ph + y * dh;
        if (ih < 0 || ih >= H) continue;
        for (int x = 0; x < kw; ++x) {
          int iw = ow * sw - pw + x * dw;
          if (iw < 0 || iw >= W) continue;
          float v = load_f(src, DT, pbase + uint(ih * W + iw));
          if (bi < 0 || v > best || (isnan(v) && !isnan(best))) { best = v; bi = ih * W + iw; }
        }
      }
      store_f(p.ptr[0], DT, gid, best);
      B64(p.ptr[1]).v[gid] = uint64_t(int64_t(max(bi, 0)));
    } else {
      int hs = oh * sh - ph, ws = ow * sw - pw;
      int he = min(hs + kh, H + ph), we = min(ws + kw, W + pw);
      int pool = (he - hs) * (we - ws);
      hs = max(hs, 0); ws = max(ws, 0); he = min(he, H); we = min(we, W);
      float s = 0.0;
      for (int ih = hs; ih < he; ++ih)
        for (int iw = ws; iw < we; ++iw) s += load_f(src, DT, pbase + uint(ih * W + iw));
      int div = p.i[13] != 0 ? pool : (he - hs) * (we - ws);
      store_f(p.ptr[0], DT, gid, s / float(div));
    }
  } else {  // avg backward: input element (plane, h, w) gathers from the windows holding it
    uint plane = gid / uint(H * W);
    int h = int(gid % uint(H * W)) / W, w = int(gid % uint(H * W)) % W;
    int oh0 = max(0, (h + ph - kh + sh) / sh), oh1 = min(Ho - 1, (h + ph) / sh);
    int ow0 = max(0, (w + pw - kw + sw) / sw), ow1 = min(Wo - 1, (w + pw) / sw);
    if (h + ph - kh + 1 < 0) oh0 = 0;
    if (w + pw - kw + 1 < 0) ow0 = 0;
    float s = 0.0;
    for (int oh = oh0; oh <= oh1; ++oh)
      for (int ow = ow0; ow <= ow1; ++ow) {
        int hs = oh * sh - ph, ws = ow * sw - pw;
        if (h < hs || h >= hs + kh || w < ws || w >= ws + kw) continue;
        int he = min(hs + kh, H + ph), we = min(ws + kw, W + pw);
        int pool = (he - hs) * (we - ws);
        int chs = max(hs, 0), cws = max(ws, 0), che = min(he, H), cwe = min(we, W);
        int div = p.i[13] != 0 ? pool : (che - chs) * (cwe - cws);
        s += load_f(p.ptr[1], DT, plane * uint(Ho * Wo) + uint(oh * Wo + ow)) / float(div);
      }
    store_f(p.ptr[0], DT, gid, s);
  }
}
