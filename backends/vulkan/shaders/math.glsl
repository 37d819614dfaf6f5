// Scalar math of the elementwise ops, with the NaN / infinity rules of the CPU backend
// (backends/cpu/cpu_unary.cpp, cpu_binary.cpp): torch semantics.
#include "op_numbers.glsl"  // UNARY_<name>, BINARY_<name>: kiln::UnaryOp / BinaryOp (elementwise_ops.def)
float k_nan() { return uintBitsToFloat(0x7fc00000u); }
float k_inf() { return uintBitsToFloat(0x7f800000u); }

// erf: Abramowitz & Stegun 7.1.26 refined (|error| < 1.2e-7), W. J. Cody's form for |x| < 0.5.
float k_erf(float x) {
  float ax = abs(x);
  if (ax < 0.5) {
    float t = x * x;
    return x * (1.128379167 + t * (-0.376126699 + t * (0.112840945 + t * (-0.026866027 + t * 0.005198482))));
  }
  if (ax >= 4.0) return sign(x);
  // erfc(ax) = t * exp(-ax^2 + P(t)) (Numerical Recipes erfcc, fractional error < 1.2e-7)
  float t = 1.0 / (1.0 + 0.5 * ax);
  float r = t * exp(-ax * ax - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
            t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
            t * (-0.82215223 + t * 0.17087277)))))))));
  return x < 0.0 ? r - 1.0 : 1.0 - r;
}
float k_tanh(float x) {
  float ax = abs(x);
  if (ax < 0.125) {
    float t = x * x;
    return x * (1.0 + t * (-0.333333333 + t * (0.133333333 + t * -0.053968254)));
  }
  if (ax > 20.0) return sign(x);
  float e = exp(-2.0 * ax);
  return sign(x) * (1.0 - e) / (1.0 + e);
}
float k_sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }
float k_log1p(float x) {
  float u = 1.0 + x;
  if (u == 1.0) return x;
  if (isinf(u)) return x > 0.0 ? u : k_nan();
  return log(u) * x / (u - 1.0);
}
float k_expm1(float x) {
  if (abs(x) < 1e-5) return x + 0.5 * x * x;
  float u = exp(x);
  if (isinf(u)) return u;
  float um1 = u - 1.0;
  if (um1 == -1.0) return -1.0;
  return um1 * x / log(u);
}
// std::pow on floats (C99 Annex F special cases).
float k_pow(float x, float y) {
  if (y == 0.0 || x == 1.0) return 1.0;
  if (isnan(x) || isnan(y)) return k_nan();
  bool yint = floor(y) == y && !isinf(y);
  bool odd = yint && abs(y) < 16777216.0 && mod(y, 2.0) == 1.0;
  if (x == 0.0) {
    float z = y > 0.0 ? 0.0 : k_inf();
    return odd && (floatBitsToUint(x) >> 31) != 0u ? -z : z;
  }
  if (isinf(y)) {
    if (x == -1.0) return 1.0;
    return (abs(x) > 1.0) == (y > 0.0) ? k_inf() : 0.0;
  }
  if (isinf(x)) {
    float z = y > 0.0 ? k_inf() : 0.0;
    return x < 0.0 && odd ? -z : z;
  }
  if (x < 0.0 && !yint) return k_nan();
  if (yint && abs(y) <= 64.0) {  // small integer powers by squaring: within an ulp or two of std::pow
    int e = int(abs(y));
    float b = x, r = 1.0;
    while (e > 0) {
      if ((e & 1) != 0) r *= b;
      b *= b;
      e >>= 1;
    }
    if (y > 0.0) return r;
    if (!isinf(r) && abs(r) >= 1.17549435e-38) return 1.0 / r;  // else x^n left the normal range: exp2 below
  }
  float r = exp2(y * log2(abs(x)));
  return x < 0.0 && odd ? -r : r;
}

float unary_f(int op, float x, float p0, float p1) {
  switch (op) {
    case UNARY_neg: return -x;
    case UNARY_abs: return abs(x);
    case UNARY_sign: return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0);
    case UNARY_exp: return exp(x);
    case UNARY_log: return log(x);
    case UNARY_log1p: return k_log1p(x);
    case UNARY_expm1: return k_expm1(x);
    case UNARY_sqrt: return sqrt(x);
    case UNARY_rsqrt: return 1.0 / sqrt(x);
    case UNARY_reciprocal: return 1.0 / x;
    case UNARY_sin: return sin(x);
    case UNARY_cos: return cos(x);
    case UNARY_tanh: return k_tanh(x);
    case UNARY_sigmoid: return k_sigmoid(x);
    case UNARY_relu: return isnan(x) ? x : (x < 0.0 ? 0.0 : x);  // spelled out: a compiler's max() may drop NaN
    case UNARY_gelu: return 0.5 * x * (1.0 + k_erf(x * 0.70710678118654752));
    case UNARY_silu: return x * k_sigmoid(x);
    case UNARY_erf: return k_erf(x);
    case UNARY_floor: return floor(x);
    case UNARY_ceil: return ceil(x);
    case UNARY_round: return roundEven(x);
    case UNARY_logical_not: return x == 0.0 ? 1.0 : 0.0;
    case UNARY_leaky_relu: return x > 0.0 ? x : x * p0;
    case UNARY_clamp: { if (isnan(x)) return x; float r = x < p0 ? p0 : x; return r > p1 ? p1 : r; }
    case UNARY_pow_scalar: return p0 == 0.0 ? 1.0 : k_pow(x, p0);
    case UNARY_hardswish: { float t = x + 3.0; t = t < 0.0 ? 0.0 : t; t = t > 6.0 ? 6.0 : t; return x * t / 6.0; }
    case UNARY_hardsigmoid: { float t = x + 3.0; t = t < 0.0 ? 0.0 : t; t = t > 6.0 ? 6.0 : t; return t / 6.0; }
  }
  return k_nan();
}

float binary_f(int op, float a, float b) {
  switch (op) {
    case BINARY_add: return a + b;
    case BINARY_sub: return a - b;
    case BINARY_mul: return a * b;
    case BINARY_div: return a / b;
    case BINARY_pow: return k_pow(a, b);
    case BINARY_maximum: return (a > b || isnan(a)) ? a : b;
    case BINARY_minimum: return (a < b || isnan(a)) ? a : b;
    case BINARY_eq: return a == b ? 1.0 : 0.0;
    case BINARY_ne: return a != b ? 1.0 : 0.0;
    case BINARY_lt: return a < b ? 1.0 : 0.0;
    case BINARY_le: return a <= b ? 1.0 : 0.0;
    case BINARY_gt: return a > b ? 1.0 : 0.0;
    case BINARY_ge: return a >= b ? 1.0 : 0.0;
    case BINARY_logical_and: return (a != 0.0 && b != 0.0) ? 1.0 : 0.0;
    case BINARY_logical_or: return (a != 0.0 || b != 0.0) ? 1.0 : 0.0;
  }
  return k_nan();
}

int64_t int_pow(int64_t a, int64_t e) {
  if (e < 0) return a == 1 ? 1 : (a == -1 ? ((e & 1) != 0 ? -1 : 1) : 0);
  int64_t r = 1;
  for (; e != 0; e >>= 1) {
    if ((e & 1) != 0) r *= a;
    a *= a;
  }
  return r;
}
// Integer arithmetic wraps (in 64 bits, then truncated to the dtype by the store).
int64_t binary_i(int op, int64_t a, int64_t b) {
  switch (op) {
    case BINARY_add: return a + b;
    case BINARY_sub: return a - b;
    case BINARY_mul: return a * b;
    case BINARY_div: return b == 0 ? 0 : (b == -1 ? -a : a / b);
    case BINARY_pow: return b < 0 ? (a == 1 ? 1 : (a == -1 ? ((b & 1) != 0 ? -1 : 1) : 0)) : int_pow(a, b);
    case BINARY_maximum: return a > b ? a : b;
    case BINARY_minimum: return a < b ? a : b;
    case BINARY_eq: return a == b ? 1 : 0;
    case BINARY_ne: return a != b ? 1 : 0;
    case BINARY_lt: return a < b ? 1 : 0;
    case BINARY_le: return a <= b ? 1 : 0;
    case BINARY_gt: return a > b ? 1 : 0;
    case BINARY_ge: return a >= b ? 1 : 0;
    case BINARY_logical_and: return (a != 0 && b != 0) ? 1 : 0;
    case BINARY_logical_or: return (a != 0 || b != 0) ? 1 : 0;
  }
  return 0;
}
