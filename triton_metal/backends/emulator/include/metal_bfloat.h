// metal_bfloat.h - the MSL 3.1 `bfloat` scalar type.
//
// Contract (MSL 3.1, section 2.1): bfloat converts implicitly only to float
// (a type of greater floating-point rank); float, half and the integer types
// convert to bfloat only explicitly (`bfloat(x)`), with IEEE
// round-to-nearest-even; bfloat does not convert implicitly to half, and
// mixing bfloat with half in one expression is an error. Arithmetic between
// bfloats (or a bfloat and an integer) gives a bfloat: computed in float and
// rounded back, which equals a correctly rounded bfloat operation because
// float holds more than twice bfloat's 8-bit significand. bfloat mixed with
// float goes through the implicit conversion and gives float.
#pragma once

#include "metal_types.h"

struct bfloat {
  ushort tm_bits;

  bfloat() = default;

  // Only explicit construction from arithmetic types (MSL: "neither float
  // nor half can be implicitly converted to bfloat").
  template <class U, metal::enable_if_t<metal::is_arithmetic_v<U> &&
                                            !metal::is_same_v<U, bfloat>,
                                        int> = 0>
  constexpr explicit bfloat(U v) : tm_bits(tm_round(static_cast<float>(v))) {}

  // The single implicit conversion: to float. A template so that
  // copy-initialising a half, int, ... from a bfloat finds no conversion.
  template <class U, metal::enable_if_t<metal::is_same_v<U, float>, int> = 0>
  constexpr operator U() const {
    return __builtin_bit_cast(float, static_cast<uint>(tm_bits) << 16);
  }
  // Explicit conversions (`half(b)`, `int(b)`, `bool(b)`, `if (b)`).
  template <class U, metal::enable_if_t<metal::is_arithmetic_v<U> &&
                                            !metal::is_same_v<U, float> &&
                                            !metal::is_same_v<U, bfloat>,
                                        int> = 0>
  constexpr explicit operator U() const {
    return static_cast<U>(tm_float());
  }

  constexpr float tm_float() const {
    return __builtin_bit_cast(float, static_cast<uint>(tm_bits) << 16);
  }
  static constexpr bfloat tm_from_bits(ushort b) {
    bfloat r{};
    r.tm_bits = b;
    return r;
  }
  // float -> bfloat, round to nearest, ties to even; NaN stays a quiet NaN
  // with its sign.
  static constexpr ushort tm_round(float f) {
    uint u = __builtin_bit_cast(uint, f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      return static_cast<ushort>((u >> 16) | 0x0040u);
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<ushort>(u >> 16);
  }

  constexpr bfloat& operator+=(bfloat b);
  constexpr bfloat& operator-=(bfloat b);
  constexpr bfloat& operator*=(bfloat b);
  constexpr bfloat& operator/=(bfloat b);
  template <class I, metal::enable_if_t<metal::is_integral_v<I>, int> = 0>
  constexpr bfloat& operator+=(I b) { return *this += bfloat(b); }
  template <class I, metal::enable_if_t<metal::is_integral_v<I>, int> = 0>
  constexpr bfloat& operator-=(I b) { return *this -= bfloat(b); }
  template <class I, metal::enable_if_t<metal::is_integral_v<I>, int> = 0>
  constexpr bfloat& operator*=(I b) { return *this *= bfloat(b); }
  template <class I, metal::enable_if_t<metal::is_integral_v<I>, int> = 0>
  constexpr bfloat& operator/=(I b) { return *this /= bfloat(b); }

  friend constexpr bfloat operator-(bfloat a) {
    return tm_from_bits(static_cast<ushort>(a.tm_bits ^ 0x8000u));
  }
  friend constexpr bfloat operator+(bfloat a) { return a; }
  constexpr bfloat& operator++() { return *this += bfloat(1); }
  constexpr bfloat& operator--() { return *this -= bfloat(1); }
  constexpr bfloat operator++(int) { bfloat o = *this; ++*this; return o; }
  constexpr bfloat operator--(int) { bfloat o = *this; --*this; return o; }
};

static_assert(sizeof(bfloat) == 2, "bfloat is 16 bits");

// --- arithmetic: bfloat op bfloat and bfloat op integer give bfloat ------
template <class I> using tm_bf_int = metal::enable_if_t<metal::is_integral_v<I>, int>;
// bfloat mixed with half: no common type in MSL, so an error (deleted).
template <class H> using tm_bf_half = metal::enable_if_t<metal::is_same_v<H, half>, int>;
// bfloat mixed with float converts the bfloat and gives float. Spelled out
// because g++ does not apply conversion templates to built-in operators.
template <class F> using tm_bf_float = metal::enable_if_t<metal::is_same_v<F, float>, int>;

#define TM_BF_ARITH(OP)                                                        \
  constexpr bfloat operator OP(bfloat a, bfloat b) {                           \
    return bfloat(a.tm_float() OP b.tm_float());                               \
  }                                                                            \
  template <class I, tm_bf_int<I> = 0>                                         \
  constexpr bfloat operator OP(bfloat a, I b) { return a OP bfloat(b); }       \
  template <class I, tm_bf_int<I> = 0>                                         \
  constexpr bfloat operator OP(I a, bfloat b) { return bfloat(a) OP b; }       \
  template <class F, tm_bf_float<F> = 0>                                       \
  constexpr float operator OP(bfloat a, F b) { return a.tm_float() OP b; }     \
  template <class F, tm_bf_float<F> = 0>                                       \
  constexpr float operator OP(F a, bfloat b) { return a OP b.tm_float(); }     \
  template <class H, tm_bf_half<H> = 0>                                        \
  void operator OP(bfloat, H) = delete;                                        \
  template <class H, tm_bf_half<H> = 0>                                        \
  void operator OP(H, bfloat) = delete;                                        \
  constexpr bfloat& bfloat::operator OP##=(bfloat b) { return *this = *this OP b; }
TM_BF_ARITH(+)
TM_BF_ARITH(-)
TM_BF_ARITH(*)
TM_BF_ARITH(/)
#undef TM_BF_ARITH

#define TM_BF_CMP(OP)                                                          \
  constexpr bool operator OP(bfloat a, bfloat b) {                             \
    return a.tm_float() OP b.tm_float();                                       \
  }                                                                            \
  template <class I, tm_bf_int<I> = 0>                                         \
  constexpr bool operator OP(bfloat a, I b) {                                  \
    return a.tm_float() OP static_cast<float>(b);                              \
  }                                                                            \
  template <class I, tm_bf_int<I> = 0>                                         \
  constexpr bool operator OP(I a, bfloat b) {                                  \
    return static_cast<float>(a) OP b.tm_float();                              \
  }                                                                            \
  template <class F, tm_bf_float<F> = 0>                                       \
  constexpr bool operator OP(bfloat a, F b) { return a.tm_float() OP b; }      \
  template <class F, tm_bf_float<F> = 0>                                       \
  constexpr bool operator OP(F a, bfloat b) { return a OP b.tm_float(); }      \
  template <class H, tm_bf_half<H> = 0>                                        \
  void operator OP(bfloat, H) = delete;                                        \
  template <class H, tm_bf_half<H> = 0>                                        \
  void operator OP(H, bfloat) = delete;
TM_BF_CMP(==)
TM_BF_CMP(!=)
TM_BF_CMP(<)
TM_BF_CMP(<=)
TM_BF_CMP(>)
TM_BF_CMP(>=)
#undef TM_BF_CMP

namespace metal {
using ::bfloat;
}
