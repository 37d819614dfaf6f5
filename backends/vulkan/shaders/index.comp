// Index ops (index is i64, checked: an out-of-range position is skipped and reported
// through the error words). KIND 0 gather, 1 scatter_add, 2 index_select, 3 index_add.
// Threads walk the "iteration" shape: the index's (gather, scatter_add), out's
// (index_select) or src's (index_add). Params: ptr[0] = out, ptr[1] = in / src,
// ptr[2] = index; i[0] = count, i[1] = rank, i[2] = dim, i[3..10] iteration sizes,
// i[11..18] out strides, i[19..26] index strides (1-d index: i[19]), i[27..34] in/src
// strides, i[35] = size of the indexed dim.
#version 460
#include "common.glsl"
#extension GL_EXT_shader_atomic_int64 : require

layout(local_size_x = 256) in;
layout(constant_id = 1) const int KIND = 0;
layout(constant_id = 2) const int DT = 0;

void atomic_add(uint64_t a, uint i, uint64_t s, uint si) {
  if (DT == DT_F32) {
    B32 b = B32(a);
    float v = F32(s).v[si];
    uint old = b.v[i], assumed;
    do {
      assumed = old;
      old = atomicCompSwap(b.v[i], assumed, floatBitsToUint(uintBitsToFloat(assumed) + v));
    } while (old != assumed);
  } else if (DT == DT_I32) {
    atomicAdd(B32(a).v[i], B32(s).v[si]);
  } else if (DT == DT_I64) {
    atomicAdd(B64(a).v[i], B64(s).v[si]);
  }
}

void main() {
  ParamsRef p = P;
  uint gid = linear_id();
  if (gid >= uint(p.i[0])) return;
  int nd = p.i[1], dim = p.i[2], size = p.i[35];
  uint rem = gid, oo = 0, io = 0, so = 0, cdim = 0;
  for (int d = nd - 1; d >= 0; --d) {
    uint s = uint(p.i[3 + d]);
    uint c = rem % s;
    rem /= s;
    if (d == dim) cdim = c;
    oo += c * uint(p.i[11 + d]);
    io += c * uint(p.i[19 + d]);
    so += c * uint(p.i[27 + d]);
  }
  int64_t idx;
  if (KIND == 0 || KIND == 1) idx = int64_t(B64(p.ptr[2]).v[io]);
  else idx = int64_t(B64(p.ptr[2]).v[cdim * uint(p.i[19])]);
  if (idx < 0 || idx >= int64_t(size)) {
    report_error(1u, uint(KIND + 1), idx, dim, size);
    return;
  }
  uint moved = uint(idx) - cdim;  // the indexed tensor's position differs only along dim
  uint64_t dst = p.ptr[0], src = p.ptr[1];
  if (KIND == 0 || KIND == 2) {  // out[c] = in[c with c_dim = idx]
    uint si = so + moved * uint(p.i[27 + dim]);
    if (dt_is_int(DT)) store_i(dst, DT, oo, load_i(src, DT, si));
    else store_f(dst, DT, oo, load_f(src, DT, si));
  } else {  // out[c with c_dim = idx] += src[c]
    atomic_add(dst, oo + moved * uint(p.i[11 + dim]), src, so);
  }
}
