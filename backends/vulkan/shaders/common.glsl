// Shared by every Kiln compute shader: tensor access through buffer device addresses,
// loads and stores of every dtype (codes of kiln::DType), the dispatch's Params
// (vk_context.h) and the error words (kiln::vk::ErrorCode).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require

layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32 { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer B32 { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer B16 { uint16_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 1) buffer B8 { uint8_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer B64 { uint64_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ParamsRef {
  uint64_t ptr[6];
  uint64_t err;
  int i[72];
  float f[8];
};
layout(buffer_reference, std430, buffer_reference_align = 4) buffer ErrRef { uint w[16]; };
layout(push_constant) uniform Push { ParamsRef P; };

#define DT_F32 0
#define DT_F16 1
#define DT_BF16 2
#define DT_F64 3
#define DT_I64 4
#define DT_I32 5
#define DT_U8 6
#define DT_I8 7
#define DT_BOOL 8
bool dt_is_int(int dt) { return dt >= DT_I64; }
int dt_size(int dt) { return dt == DT_F64 || dt == DT_I64 ? 8 : (dt == DT_F32 || dt == DT_I32) ? 4 : dt <= DT_BF16 ? 2 : 1; }
// Copies one element's bits (same dtype).
void copy_raw(uint64_t dst, uint di, uint64_t src, uint si, int dt) {
  int n = dt_size(dt);
  if (n == 8) B64(dst).v[di] = B64(src).v[si];
  else if (n == 4) B32(dst).v[di] = B32(src).v[si];
  else if (n == 2) B16(dst).v[di] = B16(src).v[si];
  else B8(dst).v[di] = B8(src).v[si];
}

// A macro, not a function: gl_WorkGroupSize is only known after the shader's own
// layout(local_size_x ...) declaration, which follows this include.
#define linear_id() ((gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x)

uint f32_to_bf16(float x) {  // round to nearest even, NaN kept quiet (as kiln::float_to_bf16)
  uint u = floatBitsToUint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return ((u >> 16) | 0x40u) & 0xffffu;
  u += 0x7fffu + ((u >> 16) & 1u);
  return u >> 16;
}

// f64 is converted with integer bit operations (no shaderFloat64 needed): exact from f32
// and integers below 2^53, rounded to nearest even otherwise; f64 -> f32 flushes values
// below f32's normal range to zero.
const uint64_t M52 = 0xfffffffffffffUL;
uint64_t f32_to_f64(float x) {
  uint u = floatBitsToUint(x), e = (u >> 23) & 0xffu, m = u & 0x7fffffu;
  uint64_t s = uint64_t(u >> 31) << 63;
  if (e == 255u) return s | (0x7ffUL << 52) | (uint64_t(m) << 29);
  if (e == 0u) {
    if (m == 0u) return s;
    int shift = 23 - findMSB(m);
    m = (m << shift) & 0x7fffffu;
    return s | (uint64_t(1 - 127 - shift + 1023) << 52) | (uint64_t(m) << 29);
  }
  return s | (uint64_t(e - 127u + 1023u) << 52) | (uint64_t(m) << 29);
}
float f64_to_f32(uint64_t b) {
  uint sign = uint(b >> 32) & 0x80000000u;
  int e = int((b >> 52) & 0x7ffUL);
  uint64_t m = b & M52;
  if (e == 0x7ff) return m != 0UL ? uintBitsToFloat(0x7fc00000u) : uintBitsToFloat(sign | 0x7f800000u);
  int e32 = e - 1023 + 127;
  if (e32 >= 255) return uintBitsToFloat(sign | 0x7f800000u);
  if (e32 <= 0) return uintBitsToFloat(sign);
  uint m23 = uint(m >> 29), rest = uint(m & 0x1fffffffUL);
  if (rest > 0x10000000u || (rest == 0x10000000u && (m23 & 1u) != 0u)) m23 += 1u;  // a carry bumps the exponent
  return uintBitsToFloat(sign | ((uint(e32) << 23) + m23));
}
uint64_t i64_to_f64(int64_t v) {
  if (v == 0) return 0UL;
  uint64_t s = v < 0 ? (1UL << 63) : 0UL, a = v < 0 ? uint64_t(-v) : uint64_t(v);
  uint hi = uint(a >> 32);
  int msb = hi != 0u ? 32 + findMSB(hi) : findMSB(uint(a));
  int e = msb;
  uint64_t m;
  if (msb <= 52) {
    m = a << (52 - msb);
  } else {
    int sh = msb - 52;
    uint64_t rest = a & ((1UL << sh) - 1UL), mid = 1UL << (sh - 1);
    m = a >> sh;
    if (rest > mid || (rest == mid && (m & 1UL) != 0UL)) {
      m += 1UL;
      if ((m >> 53) != 0UL) { m >>= 1; e += 1; }
    }
  }
  return s | (uint64_t(e + 1023) << 52) | (m & M52);
}
int64_t f64_to_i64(uint64_t b) {  // truncates toward zero
  int e = int((b >> 52) & 0x7ffUL) - 1023;
  if (e < 0) return 0;
  uint64_t m = (b & M52) | (1UL << 52);
  uint64_t a = e >= 52 ? (e >= 63 ? 0UL : m << (e - 52)) : m >> (52 - e);
  return (b >> 63) != 0UL ? -int64_t(a) : int64_t(a);
}

float load_f(uint64_t a, int dt, uint i) {
  if (dt == DT_F64) return f64_to_f32(B64(a).v[i]);
  if (dt == DT_F32) return F32(a).v[i];
  if (dt == DT_F16) return unpackHalf2x16(uint(B16(a).v[i])).x;
  if (dt == DT_BF16) return uintBitsToFloat(uint(B16(a).v[i]) << 16);
  if (dt == DT_I64) return float(int64_t(B64(a).v[i]));
  if (dt == DT_I32) return float(int(B32(a).v[i]));
  if (dt == DT_I8) return float((int(uint(B8(a).v[i])) << 24) >> 24);
  return float(uint(B8(a).v[i]));
}
// Sign extension by hand: int64_t(int) came out zero-extended on lavapipe.
int64_t sext32(uint u) { return int64_t(uint64_t(u) | ((u & 0x80000000u) != 0u ? 0xffffffff00000000UL : 0UL)); }
int64_t load_i(uint64_t a, int dt, uint i) {
  if (dt == DT_I64) return int64_t(B64(a).v[i]);
  if (dt == DT_I32) return sext32(B32(a).v[i]);
  if (dt == DT_I8) return sext32(uint((int(uint(B8(a).v[i])) << 24) >> 24));
  if (dt == DT_U8 || dt == DT_BOOL) return int64_t(uint(B8(a).v[i]));
  if (dt == DT_F64) return f64_to_i64(B64(a).v[i]);
  return int64_t(load_f(a, dt, i));
}
void store_fp(uint64_t a, int dt, uint i, float x) {
  if (dt == DT_F32) F32(a).v[i] = x;
  else if (dt == DT_F16) B16(a).v[i] = uint16_t(packHalf2x16(vec2(x, 0.0)) & 0xffffu);
  else B16(a).v[i] = uint16_t(f32_to_bf16(x));
}
void store_i(uint64_t a, int dt, uint i, int64_t x) {
  if (dt == DT_I64) B64(a).v[i] = uint64_t(x);
  else if (dt == DT_I32) B32(a).v[i] = uint(int(x));
  else if (dt == DT_BOOL) B8(a).v[i] = uint8_t(x != 0 ? 1u : 0u);
  else if (dt == DT_U8 || dt == DT_I8) B8(a).v[i] = uint8_t(uint(x) & 0xffu);
  else if (dt == DT_F64) B64(a).v[i] = i64_to_f64(x);
  else store_fp(a, dt, i, float(x));
}
void store_f(uint64_t a, int dt, uint i, float x) {
  if (dt <= DT_BF16) store_fp(a, dt, i, x);
  else if (dt == DT_F64) B64(a).v[i] = f32_to_f64(x);
  else if (dt == DT_BOOL) B8(a).v[i] = uint8_t(x != 0.0 ? 1u : 0u);
  else store_i(a, dt, i, int64_t(x));
}

// First error wins; later ones are dropped until the host reads and clears the words.
void report_error(uint code, uint op, int64_t value, int dim, int size) {
  ErrRef e = ErrRef(P.err);
  if (atomicCompSwap(e.w[0], 0u, code) == 0u) {
    e.w[1] = op;
    e.w[2] = uint(uint64_t(value) & 0xffffffffUL);
    e.w[3] = uint(uint64_t(value) >> 32);
    e.w[4] = uint(dim);
    e.w[5] = uint(size);
  }
}
