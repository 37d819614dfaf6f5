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
#define DT_I64 4
#define DT_I32 5
#define DT_U8 6
#define DT_I8 7
#define DT_BOOL 8
bool dt_is_int(int dt) { return dt >= DT_I64; }

// A macro, not a function: gl_WorkGroupSize is only known after the shader's own
// layout(local_size_x ...) declaration, which follows this include.
#define linear_id() ((gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x)

uint f32_to_bf16(float x) {  // round to nearest even, NaN kept quiet (as kiln::float_to_bf16)
  uint u = floatBitsToUint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return ((u >> 16) | 0x40u) & 0xffffu;
  u += 0x7fffu + ((u >> 16) & 1u);
  return u >> 16;
}

float load_f(uint64_t a, int dt, uint i) {
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
  else store_fp(a, dt, i, float(x));
}
void store_f(uint64_t a, int dt, uint i, float x) {
  if (dt <= DT_BF16) store_fp(a, dt, i, x);
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
