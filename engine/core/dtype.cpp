#include "engine/core/dtype.h"

#include "engine/core/error.h"

namespace kiln {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64: case DType::i64: case DType::u64: return 8;
    case DType::f32: case DType::i32: case DType::u32: return 4;
    case DType::f16: case DType::bf16: case DType::i16: case DType::u16: return 2;
    case DType::u8: case DType::i8: case DType::bool_: return 1;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f64: return "f64";
    case DType::i64: return "i64";
    case DType::i32: return "i32";
    case DType::u8: return "u8";
    case DType::i8: return "i8";
    case DType::bool_: return "bool";
    case DType::i16: return "i16";
    case DType::u16: return "u16";
    case DType::u32: return "u32";
    case DType::u64: return "u64";
  }
  return "?";
}

DType dtype_from_name(std::string_view n) {
  if (n == "f32" || n == "float32" || n == "float") return DType::f32;
  if (n == "f16" || n == "float16" || n == "half") return DType::f16;
  if (n == "bf16" || n == "bfloat16") return DType::bf16;
  if (n == "f64" || n == "float64" || n == "double") return DType::f64;
  if (n == "i64" || n == "int64" || n == "long") return DType::i64;
  if (n == "i32" || n == "int32" || n == "int") return DType::i32;
  if (n == "u8" || n == "uint8") return DType::u8;
  if (n == "i8" || n == "int8") return DType::i8;
  if (n == "i16" || n == "int16" || n == "short") return DType::i16;
  if (n == "u16" || n == "uint16") return DType::u16;
  if (n == "u32" || n == "uint32") return DType::u32;
  if (n == "u64" || n == "uint64") return DType::u64;
  if (n == "bool") return DType::bool_;
  throw DTypeError(detail::str_cat("unknown dtype '", n, "'"));
}

bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}
bool is_integral(DType t) {
  switch (t) {
    case DType::i64: case DType::i32: case DType::i16: case DType::i8:
    case DType::u64: case DType::u32: case DType::u16: case DType::u8:
      return true;
    default:
      return false;
  }
}
bool is_signed(DType t) {
  return t != DType::bool_ && t != DType::u8 && t != DType::u16 && t != DType::u32 && t != DType::u64;
}

namespace {
int category(DType t) { return t == DType::bool_ ? 0 : is_integral(t) ? 1 : 2; }
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 2) {
    if ((a == DType::f16 && b == DType::bf16) || (a == DType::bf16 && b == DType::f16)) return DType::f32;
    return dtype_size(a) >= dtype_size(b) ? a : b;
  }
  // integers
  if (is_signed(a) == is_signed(b)) return dtype_size(a) >= dtype_size(b) ? a : b;
  DType u = is_signed(a) ? b : a, i = is_signed(a) ? a : b;
  if (dtype_size(i) > dtype_size(u)) return i;
  switch (dtype_size(u)) {  // the smallest signed type holding both
    case 1: return DType::i16;
    case 2: return DType::i32;
    case 4: return DType::i64;
    default: return DType::f64;  // u64 with a signed type (NumPy; PyTorch raises)
  }
}

DType promote_with_scalar(DType t, bool scalar_is_floating) {
  if (scalar_is_floating && !is_floating(t)) return DType::f32;  // torch.get_default_dtype()
  if (!scalar_is_floating && t == DType::bool_) return DType::i64;
  return t;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {  // subnormal half or zero
    float a;
    std::memcpy(&a, &abs, 4);
    // scale so that the subnormal's unit (2^-24) becomes 1, round to nearest even
    float scaled = a * 16777216.0f;
    uint32_t r = static_cast<uint32_t>(scaled);
    float frac = scaled - static_cast<float>(r);
    if (frac > 0.5f || (frac == 0.5f && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t mant = abs & 0x7fffffu;
  uint32_t exp = (abs >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {
      float f = static_cast<float>(mant) / 16777216.0f;
      std::memcpy(&bits, &f, 4);
      bits |= sign;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace kiln
