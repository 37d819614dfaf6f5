// Element types and PyTorch's type promotion rules.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace kiln {

// Existing values never change (plugins built against them keep working): new types append.
enum class DType : uint8_t { f32, f16, bf16, f64, i64, i32, u8, i8, bool_, i16, u16, u32, u64 };
constexpr int kNumDTypes = 13;

size_t dtype_size(DType t);                    // bytes per element
const char* dtype_name(DType t);               // "f32", "bf16", "u16", "bool" ...
// Accepts our names and PyTorch's ("float32", "int16", "uint16", "uint32", "uint64");
// throws DTypeError naming an unknown one.
DType dtype_from_name(std::string_view name);
bool is_floating(DType t);
bool is_integral(DType t);  // integer types (i8..i64, u8..u64), bool excluded
bool is_signed(DType t);    // floating types and i8..i64

// Result type of a binary op on tensors of types a and b, following
// torch.promote_types / torch.result_type (PyTorch 2.x, c10/core/ScalarType.cpp) for tensors
// of equal dimension category: bool < integers < floating; within a category the wider
// type; f16 with bf16 gives f32; u8 with i8 gives i16 (PyTorch's table).
// PyTorch raises "Promotion for uint16, uint32, uint64 types is not supported" when u16,
// u32 or u64 meets a different non-floating type (bool included). Kiln gives NumPy's
// result there instead (numpy.promote_types): bool with uN -> uN; two unsigned types ->
// the wider; uN with a signed type -> the smallest signed type holding both (u16+i16 ->
// i32, u32+i32 -> i64); u64 with a signed type -> f64 (no integer type holds both).
DType promote_types(DType a, DType b);

// Tensor-with-scalar promotion (PyTorch: a Python scalar does not widen the
// tensor's type unless it is of a higher category: int tensor * 0.5 -> float).
DType promote_with_scalar(DType tensor, bool scalar_is_floating);

// IEEE half and bfloat16 conversions (round to nearest even).
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16_to_float(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Storage types for the 16-bit floats; arithmetic goes through float.
struct half {
  uint16_t bits = 0;
  half() = default;
  half(float f) : bits(float_to_half(f)) {}
  operator float() const { return half_to_float(bits); }
};
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  bfloat16(float f) : bits(float_to_bf16(f)) {}
  operator float() const { return bf16_to_float(bits); }
};

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<half> { static constexpr DType value = DType::f16; };
template <> struct dtype_of<bfloat16> { static constexpr DType value = DType::bf16; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::i8; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::bool_; };
template <> struct dtype_of<int16_t> { static constexpr DType value = DType::i16; };
template <> struct dtype_of<uint16_t> { static constexpr DType value = DType::u16; };
template <> struct dtype_of<uint32_t> { static constexpr DType value = DType::u32; };
template <> struct dtype_of<uint64_t> { static constexpr DType value = DType::u64; };

}  // namespace kiln

// KILN_DISPATCH(dtype, T, ...) runs the statement block with `T` bound to the C++
// type of dtype. Throws DTypeError for an unexpected value.
#define KILN_DISPATCH_CASE(E, CT, ...) \
  case ::kiln::DType::E: {             \
    using T = CT;                      \
    __VA_ARGS__;                       \
    break;                             \
  }
#define KILN_DISPATCH_ALL(dt, ...)                                        \
  switch (dt) {                                                           \
    KILN_DISPATCH_CASE(f32, float, __VA_ARGS__)                           \
    KILN_DISPATCH_CASE(f64, double, __VA_ARGS__)                          \
    KILN_DISPATCH_CASE(f16, ::kiln::half, __VA_ARGS__)                    \
    KILN_DISPATCH_CASE(bf16, ::kiln::bfloat16, __VA_ARGS__)               \
    KILN_DISPATCH_CASE(i64, int64_t, __VA_ARGS__)                         \
    KILN_DISPATCH_CASE(i32, int32_t, __VA_ARGS__)                         \
    KILN_DISPATCH_CASE(u8, uint8_t, __VA_ARGS__)                          \
    KILN_DISPATCH_CASE(i8, int8_t, __VA_ARGS__)                           \
    KILN_DISPATCH_CASE(bool_, bool, __VA_ARGS__)                          \
    KILN_DISPATCH_CASE(i16, int16_t, __VA_ARGS__)                         \
    KILN_DISPATCH_CASE(u16, uint16_t, __VA_ARGS__)                        \
    KILN_DISPATCH_CASE(u32, uint32_t, __VA_ARGS__)                        \
    KILN_DISPATCH_CASE(u64, uint64_t, __VA_ARGS__)                        \
  }
