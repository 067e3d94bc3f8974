// metal_half.h - `half` for compilers whose C++ has no _Float16 (GCC < 13 on aarch64).
//
// Contract: where the compiler has _Float16 in C++ (GCC on x86-64, GCC >= 13, clang on arm64)
// metal_types.h uses it directly. Otherwise this class gives `half` the same behaviour: IEEE
// binary16 storage (__fp16), implicit conversions to and from float and from integers,
// half op half and half op integer give half rounded after every operation (computed in float,
// which is exact before the one rounding for + - * /), half mixed with float gives float.
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

struct half {
  __fp16 tm_v;

  half() = default;
  constexpr half(float f) : tm_v(static_cast<__fp16>(f)) {}
  template <class I, tm_half_int_t<I> = 0>
  constexpr half(I i) : tm_v(static_cast<__fp16>(static_cast<float>(i))) {}
  constexpr operator float() const { return static_cast<float>(tm_v); }

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

constexpr half operator-(half a) { return half(-float(a)); }
constexpr half operator+(half a) { return a; }
