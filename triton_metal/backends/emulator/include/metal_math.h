// metal_math.h - MSL floating-point math: metal::, metal::precise::, metal::fast::.
//
// Contract: the float and half overloads (and their vectors) of the MSL math
// and common functions, only those MSL has (no erf, log1p, hypot, expf, ...),
// so a kernel calling something else fails to compile. float functions map
// to GCC builtins, which compile to inline code or libm calls (link with
// -lm). half functions compute in float and round the result to half once.
// metal::precise:: and metal::fast:: offer the float functions with the same
// (IEEE, correctly handled NaN/Inf) results: the emulator does not model fast
// math's lower accuracy (fast::divide excepted: it moves the quotient within
// its documented bound). min/max on floats equal fmin/fmax (a NaN operand
// yields the other operand; -0.0 orders below +0.0).
// bfloat has no math functions in MSL: a bfloat argument converts to float
// and the float result does not convert back implicitly (mlx_preamble.h adds
// MLX's bfloat overloads).
#pragma once

#include "metal_vector.h"

#define M_E_F 2.71828182845904523536028747135266250f
#define M_LOG2E_F 1.44269504088896340735992468100189214f
#define M_LOG10E_F 0.434294481903251827651128918916605082f
#define M_LN2_F 0.693147180559945309417232121458176568f
#define M_LN10_F 2.30258509299404568401799145468436421f
#define M_PI_F 3.14159265358979323846264338327950288f
#define M_PI_2_F 1.57079632679489661923132169163975144f
#define M_PI_4_F 0.785398163397448309615660845819875721f
#define M_1_PI_F 0.318309886183790671537767526745028724f
#define M_2_PI_F 0.636619772367581343075535053490057448f
#define M_2_SQRTPI_F 1.12837916709551257389615890312154517f
#define M_SQRT2_F 1.41421356237309504880168872420969808f
#define M_SQRT1_2_F 0.707106781186547524400844362104849039f
#define MAXFLOAT 0x1.fffffep+127f
#define HUGE_VALF __builtin_huge_valf()
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define FLT_MAX 0x1.fffffep+127f
#define FLT_MIN 0x1p-126f
#define FLT_EPSILON 0x1p-23f
#define HALF_MAX 65504.0f
#define HALF_MIN 0x1p-14f
#define HALF_EPSILON 0x1p-10f

namespace metal {

// Float-element vectors (float or half), one operand or several of one type.
template <class V, class R = tm_vtype<V>>
using tm_if_fvec = enable_if_t<(tm_vn<V> > 0) && (is_same_v<tm_velem<V>, float> ||
                                                  is_same_v<tm_velem<V>, half>),
                               R>;
template <class V, class R = tm_vtype<V>>
using tm_if_f32vec = enable_if_t<(tm_vn<V> > 0) && is_same_v<tm_velem<V>, float>, R>;
template <class A, class B, class R = tm_vtype<A>>
using tm_if_same_fvec = enable_if_t<is_same_v<tm_vtype<A>, tm_vtype<B>>, tm_if_fvec<A, R>>;
template <class A, class B, class C, class R = tm_vtype<A>>
using tm_if_same_fvec3 = enable_if_t<is_same_v<tm_vtype<A>, tm_vtype<C>>, tm_if_same_fvec<A, B, R>>;

// ---- one argument --------------------------------------------------------
#define TM_VEC_MAP1(NAME, IF)                                                  \
  template <class V>                                                           \
  METAL_FUNC IF<V> NAME(const V& v) {                                          \
    tm_vtype<V> r;                                                             \
    for (int i = 0; i < tm_vn<V>; ++i) r.tm_data[i] = NAME(tm_lane(v, i));     \
    return r;                                                                  \
  }
#define TM_MATH1(NAME, EXPR)                                                   \
  METAL_FUNC float NAME(float x) { return EXPR; }                              \
  METAL_FUNC half NAME(half x) { return static_cast<half>(NAME(static_cast<float>(x))); } \
  TM_VEC_MAP1(NAME, tm_if_fvec)

TM_MATH1(exp, __builtin_expf(x))
TM_MATH1(exp2, __builtin_exp2f(x))
TM_MATH1(exp10, __builtin_powf(10.0f, x))
TM_MATH1(log, __builtin_logf(x))
TM_MATH1(log2, __builtin_log2f(x))
TM_MATH1(log10, __builtin_log10f(x))
TM_MATH1(sin, __builtin_sinf(x))
TM_MATH1(cos, __builtin_cosf(x))
TM_MATH1(tan, __builtin_tanf(x))
TM_MATH1(asin, __builtin_asinf(x))
TM_MATH1(acos, __builtin_acosf(x))
TM_MATH1(atan, __builtin_atanf(x))
TM_MATH1(sinh, __builtin_sinhf(x))
TM_MATH1(cosh, __builtin_coshf(x))
TM_MATH1(tanh, __builtin_tanhf(x))
TM_MATH1(asinh, __builtin_asinhf(x))
TM_MATH1(acosh, __builtin_acoshf(x))
TM_MATH1(atanh, __builtin_atanhf(x))
// x*pi loses accuracy for large x: reduce modulo 2 first (exact in float).
TM_MATH1(sinpi, __builtin_sinf(M_PI_F * __builtin_fmodf(x, 2.0f)))
TM_MATH1(cospi, __builtin_cosf(M_PI_F * __builtin_fmodf(x, 2.0f)))
TM_MATH1(tanpi, __builtin_tanf(M_PI_F * __builtin_fmodf(x, 1.0f)))
TM_MATH1(sqrt, __builtin_sqrtf(x))
TM_MATH1(rsqrt, 1.0f / __builtin_sqrtf(x))
TM_MATH1(fabs, __builtin_fabsf(x))
TM_MATH1(abs, __builtin_fabsf(x))
TM_MATH1(floor, __builtin_floorf(x))
TM_MATH1(ceil, __builtin_ceilf(x))
TM_MATH1(round, __builtin_roundf(x))
TM_MATH1(rint, __builtin_rintf(x))
TM_MATH1(trunc, __builtin_truncf(x))
// MSL: fract(x) = fmin(x - floor(x), 0x1.fffffep-1f).
TM_MATH1(fract, __builtin_fminf(x - __builtin_floorf(x), 0x1.fffffep-1f))
TM_MATH1(saturate, __builtin_fminf(__builtin_fmaxf(x, 0.0f), 1.0f))
// MSL sign: 1.0 for x > 0, -1.0 for x < 0, x itself for +-0, 0 for NaN.
TM_MATH1(sign, x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : __builtin_isnan(x) ? 0.0f : x)
#undef TM_MATH1

// ---- predicates: bool for scalars, boolN for vectors ----------------------
#define TM_PRED1(NAME, EXPR)                                                   \
  METAL_FUNC bool NAME(float x) { return EXPR; }                               \
  METAL_FUNC bool NAME(half h) { return NAME(static_cast<float>(h)); }        \
  template <class V>                                                           \
  METAL_FUNC tm_if_fvec<V, vec<bool, tm_vn<V>>> NAME(const V& v) {             \
    vec<bool, tm_vn<V>> r;                                                     \
    for (int i = 0; i < tm_vn<V>; ++i) r.tm_data[i] = NAME(tm_lane(v, i));     \
    return r;                                                                  \
  }
TM_PRED1(isnan, __builtin_isnan(x))
TM_PRED1(isinf, __builtin_isinf(x))
TM_PRED1(isfinite, __builtin_isfinite(x))
TM_PRED1(isnormal, __builtin_isnormal(x))
TM_PRED1(signbit, __builtin_signbit(x) != 0)
#undef TM_PRED1

// ---- two arguments of one type --------------------------------------------
#define TM_VEC_MAP2(NAME, IF)                                                  \
  template <class A, class B>                                                  \
  METAL_FUNC IF<A, B> NAME(const A& a, const B& b) {                           \
    tm_vtype<A> r;                                                             \
    for (int i = 0; i < tm_vn<A>; ++i)                                         \
      r.tm_data[i] = NAME(tm_lane(a, i), tm_lane(b, i));                       \
    return r;                                                                  \
  }
#define TM_MATH2(NAME, EXPR)                                                   \
  METAL_FUNC float NAME(float x, float y) { return EXPR; }                     \
  METAL_FUNC half NAME(half x, half y) {                                       \
    return static_cast<half>(NAME(static_cast<float>(x), static_cast<float>(y))); \
  }                                                                            \
  TM_VEC_MAP2(NAME, tm_if_same_fvec)

TM_MATH2(pow, __builtin_powf(x, y))
// powr is defined for x >= 0 only; NaN otherwise.
TM_MATH2(powr, x >= 0.0f ? __builtin_powf(x, y) : __builtin_nanf(""))
TM_MATH2(atan2, __builtin_atan2f(x, y))
TM_MATH2(fmod, __builtin_fmodf(x, y))
// MSL leaves open which zero fmin/fmax return for a -0.0 and a +0.0 (either operand); the
// emulator orders -0.0 below +0.0 (IEEE 754-2019 minimumNumber/maximumNumber), so its answer does
// not depend on the operands' order (a reduction tree's shape) and is the one the interpreter gives.
METAL_FUNC float tm_fmin(float x, float y) {
  return x == y ? (__builtin_signbit(x) ? x : y) : __builtin_fminf(x, y);
}
METAL_FUNC float tm_fmax(float x, float y) {
  return x == y ? (__builtin_signbit(x) ? y : x) : __builtin_fmaxf(x, y);
}
TM_MATH2(fmin, tm_fmin(x, y))
TM_MATH2(fmax, tm_fmax(x, y))
TM_MATH2(min, tm_fmin(x, y))
TM_MATH2(max, tm_fmax(x, y))
TM_MATH2(copysign, __builtin_copysignf(x, y))
TM_MATH2(fdim, __builtin_fdimf(x, y))
TM_MATH2(nextafter, __builtin_nextafterf(x, y))
TM_MATH2(divide, x / y)
TM_MATH2(step, y < x ? 0.0f : 1.0f)
#undef TM_MATH2

// ---- three arguments of one type ------------------------------------------
METAL_FUNC float tm_smoothstep(float e0, float e1, float x) {
  float t = __builtin_fminf(__builtin_fmaxf((x - e0) / (e1 - e0), 0.0f), 1.0f);
  return t * t * (3.0f - 2.0f * t);
}
#define TM_MATH3(NAME, EXPR)                                                   \
  METAL_FUNC float NAME(float x, float y, float z) { return EXPR; }            \
  METAL_FUNC half NAME(half x, half y, half z) {                               \
    return static_cast<half>(NAME(static_cast<float>(x), static_cast<float>(y), \
                                  static_cast<float>(z)));                     \
  }                                                                            \
  template <class A, class B, class C>                                         \
  METAL_FUNC tm_if_same_fvec3<A, B, C> NAME(const A& a, const B& b, const C& c) { \
    tm_vtype<A> r;                                                             \
    for (int i = 0; i < tm_vn<A>; ++i)                                         \
      r.tm_data[i] = NAME(tm_lane(a, i), tm_lane(b, i), tm_lane(c, i));        \
    return r;                                                                  \
  }
TM_MATH3(fma, __builtin_fmaf(x, y, z))
TM_MATH3(clamp, __builtin_fminf(__builtin_fmaxf(x, y), z))
TM_MATH3(mix, x + (y - x) * z)
TM_MATH3(smoothstep, tm_smoothstep(x, y, z))
TM_MATH3(fmin3, __builtin_fminf(__builtin_fminf(x, y), z))
TM_MATH3(fmax3, __builtin_fmaxf(__builtin_fmaxf(x, y), z))
TM_MATH3(min3, __builtin_fminf(__builtin_fminf(x, y), z))
TM_MATH3(max3, __builtin_fmaxf(__builtin_fmaxf(x, y), z))
TM_MATH3(fmedian3, __builtin_fmaxf(__builtin_fminf(x, y), __builtin_fminf(__builtin_fmaxf(x, y), z)))
TM_MATH3(median3, __builtin_fmaxf(__builtin_fminf(x, y), __builtin_fminf(__builtin_fmaxf(x, y), z)))
#undef TM_MATH3

// ---- functions with an integer or output argument -------------------------
METAL_FUNC float ldexp(float x, int k) { return __builtin_ldexpf(x, k); }
METAL_FUNC half ldexp(half x, int k) { return static_cast<half>(__builtin_ldexpf(static_cast<float>(x), k)); }
METAL_FUNC int ilogb(float x) { return __builtin_ilogbf(x); }
METAL_FUNC int ilogb(half x) { return __builtin_ilogbf(static_cast<float>(x)); }
METAL_FUNC float frexp(float x, thread int& e) { return __builtin_frexpf(x, &e); }
METAL_FUNC half frexp(half x, thread int& e) {
  return static_cast<half>(__builtin_frexpf(static_cast<float>(x), &e));
}
METAL_FUNC float modf(float x, thread float& ip) { return __builtin_modff(x, &ip); }
METAL_FUNC half modf(half x, thread half& ip) {
  float fi = 0.0f;
  half r = static_cast<half>(__builtin_modff(static_cast<float>(x), &fi));
  ip = static_cast<half>(fi);
  return r;
}
METAL_FUNC float sincos(float x, thread float& c) {
  c = __builtin_cosf(x);
  return __builtin_sinf(x);
}
METAL_FUNC half sincos(half x, thread half& c) {
  c = cos(x);
  return sin(x);
}

}  // namespace metal

// ---- metal::precise:: and metal::fast:: (float and float vectors) ----------
#define TM_NS_FWD1(NAME)                                                       \
  METAL_FUNC float NAME(float x) { return metal::NAME(x); }                    \
  template <class V>                                                           \
  METAL_FUNC metal::tm_if_f32vec<V> NAME(const V& v) { return metal::NAME(v); }
#define TM_NS_FWD2(NAME)                                                       \
  METAL_FUNC float NAME(float x, float y) { return metal::NAME(x, y); }        \
  template <class A, class B>                                                  \
  METAL_FUNC metal::enable_if_t<metal::is_same_v<metal::tm_vtype<A>, metal::tm_vtype<B>>, \
                                metal::tm_if_f32vec<A>>                        \
  NAME(const A& a, const B& b) { return metal::NAME(a, b); }
#define TM_NS_FWD3(NAME)                                                       \
  METAL_FUNC float NAME(float x, float y, float z) { return metal::NAME(x, y, z); } \
  template <class A, class B, class C>                                         \
  METAL_FUNC metal::tm_if_same_fvec3<A, B, C, metal::tm_if_f32vec<A>>         \
  NAME(const A& a, const B& b, const C& c) { return metal::NAME(a, b, c); }
#define TM_NS_BODY                                                             \
  TM_NS_FWD1(exp) TM_NS_FWD1(exp2) TM_NS_FWD1(exp10) TM_NS_FWD1(log)           \
  TM_NS_FWD1(log2) TM_NS_FWD1(log10) TM_NS_FWD1(sin) TM_NS_FWD1(cos)           \
  TM_NS_FWD1(tan) TM_NS_FWD1(asin) TM_NS_FWD1(acos) TM_NS_FWD1(atan)           \
  TM_NS_FWD1(sinh) TM_NS_FWD1(cosh) TM_NS_FWD1(tanh) TM_NS_FWD1(asinh)         \
  TM_NS_FWD1(acosh) TM_NS_FWD1(atanh) TM_NS_FWD1(sinpi) TM_NS_FWD1(cospi)      \
  TM_NS_FWD1(tanpi) TM_NS_FWD1(sqrt) TM_NS_FWD1(rsqrt) TM_NS_FWD1(fabs)        \
  TM_NS_FWD1(abs) TM_NS_FWD1(floor) TM_NS_FWD1(ceil) TM_NS_FWD1(round)         \
  TM_NS_FWD1(rint) TM_NS_FWD1(trunc) TM_NS_FWD1(fract) TM_NS_FWD1(saturate)    \
  TM_NS_FWD2(pow) TM_NS_FWD2(powr) TM_NS_FWD2(atan2) TM_NS_FWD2(fmod)          \
  TM_NS_FWD2(fmin) TM_NS_FWD2(fmax) TM_NS_FWD2(min) TM_NS_FWD2(max)            \
  TM_NS_FWD2(copysign) TM_NS_FWD2(fdim)                                       \
  TM_NS_FWD3(fma) TM_NS_FWD3(clamp) TM_NS_FWD3(fmin3) TM_NS_FWD3(fmax3)        \
  TM_NS_FWD3(fmedian3)
namespace metal {
// fast::divide is approximate: <= 2.5 ulp for |y| in [2^-126, 2^126], unspecified elsewhere
// (the specification's fast-math accuracy table). The emulator moves the IEEE quotient by a
// deterministic -2..+2 ulp chosen from the operands' bits, and returns NaN outside that range, so
// code that needs more than the documented accuracy fails here as it could on a GPU.
METAL_FUNC float tm_fast_divide(float x, float y) {
  float q = x / y;
  float ay = __builtin_fabsf(y);
  if (!(ay >= 0x1p-126f && ay <= 0x1p126f)) return __builtin_nanf("");
  if (!__builtin_isfinite(q) || q == 0.0f) return q;
  uint h = (__builtin_bit_cast(uint, x) * 0x9E3779B1u) ^ (__builtin_bit_cast(uint, y) * 0x85EBCA77u);
  int steps = static_cast<int>((h >> 13) % 5u) - 2;
  float toward = steps < 0 ? -__builtin_inff() : __builtin_inff();
  for (int i = 0; i < (steps < 0 ? -steps : steps); ++i) q = __builtin_nextafterf(q, toward);
  return q;
}
namespace precise {
TM_NS_BODY
TM_NS_FWD2(divide)
}  // namespace precise
namespace fast {
TM_NS_BODY
METAL_FUNC float divide(float x, float y) { return metal::tm_fast_divide(x, y); }
template <class A, class B>
METAL_FUNC metal::enable_if_t<metal::is_same_v<metal::tm_vtype<A>, metal::tm_vtype<B>>,
                              metal::tm_if_f32vec<A>>
divide(const A& a, const B& b) {
  metal::tm_vtype<A> r;
  for (int i = 0; i < metal::tm_vn<A>; ++i) r.tm_data[i] = divide(metal::tm_lane(a, i), metal::tm_lane(b, i));
  return r;
}
}  // namespace fast
}  // namespace metal
#undef TM_NS_BODY
#undef TM_NS_FWD1
#undef TM_NS_FWD2
#undef TM_NS_FWD3
