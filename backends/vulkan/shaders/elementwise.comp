// copy (with dtype conversion), fill, unary, binary and where over strided operands.
// Params: ptr[0] = out, ptr[1..3] = inputs; i[0] = element count, i[1] = rank (<= 8,
// dims collapsed by the host), i[2..9] = sizes, i[10 + 8k ..] = strides of operand k;
// f[0], f[1] = scalar parameters; i[42], i[43] = an integer fill value (low, high word).
#version 460
#include "common.glsl"
#include "math.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 1) const int KIND = 0;  // 0 copy, 1 fill, 2 unary, 3 binary, 4 where
layout(constant_id = 2) const int OP = 0;    // kiln::UnaryOp / kiln::BinaryOp
layout(constant_id = 3) const int DT_OUT = 0;
layout(constant_id = 4) const int DT_A = 0;
layout(constant_id = 5) const int DT_B = 0;
layout(constant_id = 6) const int DT_C = 0;

void main() {
  uint gid = linear_id();
  ParamsRef p = P;
  if (gid >= uint(p.i[0])) return;
  int nd = p.i[1];
  uint o0 = 0, o1 = 0, o2 = 0, o3 = 0;
  if (nd == 1) {
    o0 = gid * uint(p.i[10]); o1 = gid * uint(p.i[18]); o2 = gid * uint(p.i[26]); o3 = gid * uint(p.i[34]);
  } else {
    uint rem = gid;
    for (int d = nd - 1; d >= 0; --d) {
      uint s = uint(p.i[2 + d]);
      uint idx = rem % s;
      rem /= s;
      o0 += idx * uint(p.i[10 + d]);
      o1 += idx * uint(p.i[18 + d]);
      o2 += idx * uint(p.i[26 + d]);
      o3 += idx * uint(p.i[34 + d]);
    }
  }
  uint64_t dst = p.ptr[0];
  if (KIND == 1) {  // fill
    int64_t bits = int64_t(uint64_t(uint(p.i[42])) | (uint64_t(uint(p.i[43])) << 32));
    if (DT_OUT == DT_F64) B64(dst).v[o0] = uint64_t(bits);  // the double's bits
    else if (dt_is_int(DT_OUT)) store_i(dst, DT_OUT, o0, bits);
    else store_f(dst, DT_OUT, o0, p.f[0]);
  } else if (KIND == 0) {  // copy
    if (DT_OUT == DT_A) copy_raw(dst, o0, p.ptr[1], o1, DT_A);
    else if (DT_OUT == DT_BOOL) store_f(dst, DT_OUT, o0, load_f(p.ptr[1], DT_A, o1));
    else if ((dt_is_int(DT_OUT) || DT_OUT == DT_F64) && (dt_is_int(DT_A) || DT_A == DT_F64)) store_i(dst, DT_OUT, o0, load_i(p.ptr[1], DT_A, o1));
    else store_f(dst, DT_OUT, o0, load_f(p.ptr[1], DT_A, o1));
  } else if (KIND == 2) {  // unary (floating types; logical_not of anything)
    float x = load_f(p.ptr[1], DT_A, o1);
    store_f(dst, DT_OUT, o0, unary_f(OP, x, p.f[0], p.f[1]));
  } else if (KIND == 3) {  // binary
    if (dt_is_int(DT_A)) {
      int64_t a = load_i(p.ptr[1], DT_A, o1), b = load_i(p.ptr[2], DT_A, o2);
      if (OP == BINARY_div && b == 0) report_error(2u, 5u, 0, 0, 0);
      store_i(dst, DT_OUT, o0, binary_i(OP, a, b));
    } else {
      store_f(dst, DT_OUT, o0, binary_f(OP, load_f(p.ptr[1], DT_A, o1), load_f(p.ptr[2], DT_A, o2)));
    }
  } else {  // where(cond = operand 1 of DT_A, a = operand 2, b = operand 3, both DT_B)
    bool c = load_i(p.ptr[1], DT_A, o1) != 0;
    if (dt_is_int(DT_OUT)) store_i(dst, DT_OUT, o0, c ? load_i(p.ptr[2], DT_B, o2) : load_i(p.ptr[3], DT_B, o3));
    else store_f(dst, DT_OUT, o0, c ? load_f(p.ptr[2], DT_B, o2) : load_f(p.ptr[3], DT_B, o3));
  }
}
