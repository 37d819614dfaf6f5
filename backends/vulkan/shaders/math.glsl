// Scalar math of the elementwise ops, with the NaN / infinity rules of the CPU backend
// (backends/cpu/cpu_unary.cpp, cpu_binary.cpp): torch semantics.
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
    case 0: return -x;
    case 1: return abs(x);
    case 2: return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0);
    case 3: return exp(x);
    case 4: return log(x);
    case 5: return k_log1p(x);
    case 6: return k_expm1(x);
    case 7: return sqrt(x);
    case 8: return 1.0 / sqrt(x);
    case 9: return 1.0 / x;
    case 10: return sin(x);
    case 11: return cos(x);
    case 12: return k_tanh(x);
    case 13: return k_sigmoid(x);
    case 14: return isnan(x) ? x : (x < 0.0 ? 0.0 : x);  // spelled out: a compiler's max() may drop NaN
    case 15: return 0.5 * x * (1.0 + k_erf(x * 0.70710678118654752));
    case 16: return x * k_sigmoid(x);
    case 17: return k_erf(x);
    case 18: return floor(x);
    case 19: return ceil(x);
    case 20: return roundEven(x);
    case 21: return x == 0.0 ? 1.0 : 0.0;
    case 22: return x > 0.0 ? x : x * p0;
    case 23: { if (isnan(x)) return x; float r = x < p0 ? p0 : x; return r > p1 ? p1 : r; }
    case 24: return p0 == 0.0 ? 1.0 : k_pow(x, p0);
  }
  return k_nan();
}

float binary_f(int op, float a, float b) {
  switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return k_pow(a, b);
    case 5: return (a > b || isnan(a)) ? a : b;
    case 6: return (a < b || isnan(a)) ? a : b;
    case 7: return a == b ? 1.0 : 0.0;
    case 8: return a != b ? 1.0 : 0.0;
    case 9: return a < b ? 1.0 : 0.0;
    case 10: return a <= b ? 1.0 : 0.0;
    case 11: return a > b ? 1.0 : 0.0;
    case 12: return a >= b ? 1.0 : 0.0;
    case 13: return (a != 0.0 && b != 0.0) ? 1.0 : 0.0;
    case 14: return (a != 0.0 || b != 0.0) ? 1.0 : 0.0;
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
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return b == 0 ? 0 : (b == -1 ? -a : a / b);
    case 4: return b < 0 ? (a == 1 ? 1 : (a == -1 ? ((b & 1) != 0 ? -1 : 1) : 0)) : int_pow(a, b);
    case 5: return a > b ? a : b;
    case 6: return a < b ? a : b;
    case 7: return a == b ? 1 : 0;
    case 8: return a != b ? 1 : 0;
    case 9: return a < b ? 1 : 0;
    case 10: return a <= b ? 1 : 0;
    case 11: return a > b ? 1 : 0;
    case 12: return a >= b ? 1 : 0;
    case 13: return (a != 0 && b != 0) ? 1 : 0;
    case 14: return (a != 0 || b != 0) ? 1 : 0;
  }
  return 0;
}
