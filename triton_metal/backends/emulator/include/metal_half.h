// metal_half.h - `half` for compilers whose C++ has no _Float16 (GCC < 13 on aarch64,
// clang < 15 on x86-64).
//
// Contract: where the compiler has _Float16 in C++ (GCC on x86-64, GCC >= 13, clang on arm64)
// metal_types.h uses it directly. Otherwise this class gives `half` the same behaviour: IEEE
// binary16 bits, converted to and from float in software (round to nearest even, subnormals,
// infinities, NaN kept quiet) so that no compiler runtime helper is needed; implicit conversions
// to and from float and from integers; half op half and half op integer give half rounded after
// every operation (computed in float, which is exact before the one rounding for + - * /);
// half mixed with float gives float.
// Included from metal_types.h inside no namespace, before the type traits.
#pragma once

struct half;
template <class T> struct tm_half_int { static constexpr bool value = false; };
#define TM_HALF_INT(T) template <> struct tm_half_int<T> { static constexpr bool value = true; };
TM_HALF_INT(bool)
TM_HALF_INT(char)
TM_HALF_INT(signed char)
TM_HALF_INT(unsigned char)
TM_HALF_INT(short)
TM_HALF_INT(unsigned short)
TM_HALF_INT(int)
TM_HALF_INT(unsigned int)
TM_HALF_INT(long)
TM_HALF_INT(unsigned long)
TM_HALF_INT(long long)
TM_HALF_INT(unsigned long long)
#undef TM_HALF_INT
template <bool B> struct tm_half_if {};
template <> struct tm_half_if<true> { typedef int type; };
template <class I> using tm_half_int_t = typename tm_half_if<tm_half_int<I>::value>::type;
template <class A, class B> struct tm_half_same { static constexpr bool value = false; };
template <class A> struct tm_half_same<A, A> { static constexpr bool value = true; };
template <class F> using tm_half_float_t = typename tm_half_if<tm_half_same<F, float>::value>::type;

// float -> binary16 bits, round to nearest, ties to even.
constexpr unsigned short tm_float_to_half_bits(float f) {
  unsigned int x = __builtin_bit_cast(unsigned int, f);
  unsigned int sign = (x >> 16) & 0x8000u;
  unsigned int ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<unsigned short>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  if (ax >= 0x477ff000u) return static_cast<unsigned short>(sign | 0x7c00u);  // >= 65520: inf
  if (ax >= 0x38800000u) {  // a normal half: rebias the exponent, round 13 bits away
    unsigned int m = ax - 0x38000000u;
    return static_cast<unsigned short>(sign | ((m + 0x0fffu + ((m >> 13) & 1u)) >> 13));
  }
  if (ax <= 0x33000000u) return static_cast<unsigned short>(sign);  // <= 2^-25: zero
  // A subnormal half: the value in units of 2^-24, rounded to even.
  unsigned int m = (ax & 0x7fffffu) | 0x800000u;
  int shift = 126 - static_cast<int>(ax >> 23);
  unsigned int q = m >> shift, rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
  return static_cast<unsigned short>(sign | q);
}
// binary16 bits -> float (exact).
constexpr float tm_half_bits_to_float(unsigned short h) {
  unsigned int sign = (static_cast<unsigned int>(h) & 0x8000u) << 16;
  unsigned int e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    float v = static_cast<float>(m) * 0x1p-24f;
    return sign ? -v : v;
  }
  if (e == 31) return __builtin_bit_cast(float, sign | 0x7f800000u | (m << 13));
  return __builtin_bit_cast(float, sign | ((e + 112u) << 23) | (m << 13));
}

struct half {
  unsigned short tm_bits;

  half() = default;
  constexpr half(float f) : tm_bits(tm_float_to_half_bits(f)) {}
  template <class I, tm_half_int_t<I> = 0>
  constexpr half(I i) : tm_bits(tm_float_to_half_bits(static_cast<float>(i))) {}
  constexpr operator float() const { return tm_half_bits_to_float(tm_bits); }

  constexpr half& operator++() { return *this = half(float(*this) + 1.0f); }
  constexpr half& operator--() { return *this = half(float(*this) - 1.0f); }
  constexpr half operator++(int) { half o = *this; ++*this; return o; }
  constexpr half operator--(int) { half o = *this; --*this; return o; }
};
static_assert(sizeof(half) == 2, "half is 16 bits");

#define TM_HALF_ARITH(OP)                                                      \
  constexpr half operator OP(half a, half b) { return half(float(a) OP float(b)); } \
  template <class I, tm_half_int_t<I> = 0>                                     \
  constexpr half operator OP(half a, I b) { return a OP half(b); }             \
  template <class I, tm_half_int_t<I> = 0>                                     \
  constexpr half operator OP(I a, half b) { return half(a) OP b; }             \
  template <class F, tm_half_float_t<F> = 0>                                   \
  constexpr float operator OP(half a, F b) { return float(a) OP b; }           \
  template <class F, tm_half_float_t<F> = 0>                                   \
  constexpr float operator OP(F a, half b) { return a OP float(b); }           \
  constexpr half& operator OP##=(half& a, half b) { return a = a OP b; }       \
  template <class I, tm_half_int_t<I> = 0>                                     \
  constexpr half& operator OP##=(half& a, I b) { return a = a OP half(b); }    \
  template <class F, tm_half_float_t<F> = 0>                                   \
  constexpr half& operator OP##=(half& a, F b) { return a = half(float(a) OP b); }
TM_HALF_ARITH(+)
TM_HALF_ARITH(-)
TM_HALF_ARITH(*)
TM_HALF_ARITH(/)
#undef TM_HALF_ARITH

#define TM_HALF_CMP(OP)                                                        \
  constexpr bool operator OP(half a, half b) { return float(a) OP float(b); }  \
  template <class I, tm_half_int_t<I> = 0>                                     \
  constexpr bool operator OP(half a, I b) { return float(a) OP float(b); }     \
  template <class I, tm_half_int_t<I> = 0>                                     \
  constexpr bool operator OP(I a, half b) { return float(a) OP float(b); }     \
  template <class F, tm_half_float_t<F> = 0>                                   \
  constexpr bool operator OP(half a, F b) { return float(a) OP b; }            \
  template <class F, tm_half_float_t<F> = 0>                                   \
  constexpr bool operator OP(F a, half b) { return a OP float(b); }
TM_HALF_CMP(==)
TM_HALF_CMP(!=)
TM_HALF_CMP(<)
TM_HALF_CMP(<=)
TM_HALF_CMP(>)
TM_HALF_CMP(>=)
#undef TM_HALF_CMP

// Negation flips the sign bit, as Metal's does: through float a signalling NaN would turn quiet.
constexpr half operator-(half a) {
  half r = a;
  r.tm_bits = static_cast<unsigned short>(a.tm_bits ^ 0x8000u);
  return r;
}
constexpr half operator+(half a) { return a; }
