// metal_integer.h - MSL integer functions on scalars and vectors.
//
// Contract: abs absdiff addsat subsat hadd rhadd clamp clz ctz popcount
// reverse_bits rotate mulhi mul24 mad24 min max min3 max3 median3 for every
// integer type T (char ... ulong) and their vectors, returning T (absdiff:
// the unsigned type). Both operands must have the same type, as in MSL; a
// mixed call such as min(uint, int) does not compile. clz/ctz of 0 give the
// bit width.
#pragma once

#include "metal_vector.h"

namespace metal {

template <class T, class R = T>
using tm_if_int = enable_if_t<is_integral_v<T> && !is_same_v<remove_cv_t<T>, bool>, R>;
template <class V, class R = tm_vtype<V>>
using tm_if_ivec = enable_if_t<(tm_vn<V> > 0) && is_integral_v<tm_velem<V>> &&
                                   !is_same_v<tm_velem<V>, bool>,
                               R>;

template <class T> constexpr int tm_bits = static_cast<int>(sizeof(T) * 8);
template <class T> METAL_FUNC make_unsigned_t<T> tm_u(T x) {
  return static_cast<make_unsigned_t<T>>(x);
}

// ---- scalar implementations ----------------------------------------------
template <class T> METAL_FUNC tm_if_int<T> abs(T x) {
  return x < T(0) ? static_cast<T>(-tm_u(x)) : x;
}
template <class T> METAL_FUNC tm_if_int<T, make_unsigned_t<T>> absdiff(T x, T y) {
  return x > y ? static_cast<make_unsigned_t<T>>(tm_u(x) - tm_u(y))
               : static_cast<make_unsigned_t<T>>(tm_u(y) - tm_u(x));
}
template <class T> METAL_FUNC tm_if_int<T> min(T x, T y) { return y < x ? y : x; }
template <class T> METAL_FUNC tm_if_int<T> max(T x, T y) { return x < y ? y : x; }
template <class T> METAL_FUNC tm_if_int<T> clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
template <class T> METAL_FUNC tm_if_int<T> min3(T x, T y, T z) { return min(min(x, y), z); }
template <class T> METAL_FUNC tm_if_int<T> max3(T x, T y, T z) { return max(max(x, y), z); }
template <class T> METAL_FUNC tm_if_int<T> median3(T x, T y, T z) {
  return max(min(x, y), min(max(x, y), z));
}
template <class T> METAL_FUNC tm_if_int<T> addsat(T x, T y) {
  T r;
  if (!__builtin_add_overflow(x, y, &r)) return r;
  if (is_signed_v<T> && x < T(0)) return static_cast<T>(tm_u(T(1)) << (tm_bits<T> - 1));
  return is_signed_v<T> ? static_cast<T>(~(tm_u(T(1)) << (tm_bits<T> - 1))) : static_cast<T>(~T(0));
}
template <class T> METAL_FUNC tm_if_int<T> subsat(T x, T y) {
  T r;
  if (!__builtin_sub_overflow(x, y, &r)) return r;
  if (!is_signed_v<T>) return T(0);
  return x < T(0) ? static_cast<T>(tm_u(T(1)) << (tm_bits<T> - 1))
                  : static_cast<T>(~(tm_u(T(1)) << (tm_bits<T> - 1)));
}
// (x + y) >> 1 and (x + y + 1) >> 1 without overflow.
template <class T> METAL_FUNC tm_if_int<T> hadd(T x, T y) {
  return static_cast<T>((x >> 1) + (y >> 1) + (x & y & T(1)));
}
template <class T> METAL_FUNC tm_if_int<T> rhadd(T x, T y) {
  return static_cast<T>((x >> 1) + (y >> 1) + ((x | y) & T(1)));
}
template <class T> METAL_FUNC tm_if_int<T> popcount(T x) {
  return static_cast<T>(__builtin_popcountll(static_cast<unsigned long long>(tm_u(x))));
}
template <class T> METAL_FUNC tm_if_int<T> clz(T x) {
  unsigned long long u = tm_u(x);
  return static_cast<T>(u == 0 ? tm_bits<T> : __builtin_clzll(u) - (64 - tm_bits<T>));
}
template <class T> METAL_FUNC tm_if_int<T> ctz(T x) {
  unsigned long long u = tm_u(x);
  return static_cast<T>(u == 0 ? tm_bits<T> : __builtin_ctzll(u));
}
template <class T> METAL_FUNC tm_if_int<T> reverse_bits(T x) {
  make_unsigned_t<T> u = tm_u(x), r = 0;
  for (int i = 0; i < tm_bits<T>; ++i) r = static_cast<make_unsigned_t<T>>((r << 1) | ((u >> i) & 1u));
  return static_cast<T>(r);
}
// Rotate left by y modulo the bit width.
template <class T> METAL_FUNC tm_if_int<T> rotate(T x, T y) {
  int s = static_cast<int>(tm_u(y) % tm_bits<T>);
  make_unsigned_t<T> u = tm_u(x);
  if (s == 0) return x;
  return static_cast<T>(static_cast<make_unsigned_t<T>>((u << s) | (u >> (tm_bits<T> - s))));
}
// High half of the full product.
template <class T> METAL_FUNC tm_if_int<T> mulhi(T x, T y) {
  if constexpr (sizeof(T) == 8) {
    typedef conditional_t<is_signed_v<T>, __int128, unsigned __int128> wide;
    return static_cast<T>((static_cast<wide>(x) * static_cast<wide>(y)) >> 64);
  } else {
    typedef conditional_t<is_signed_v<T>, long, ulong> wide;
    return static_cast<T>((static_cast<wide>(x) * static_cast<wide>(y)) >> tm_bits<T>);
  }
}
template <class T> METAL_FUNC tm_if_int<T> mul24(T x, T y) { return static_cast<T>(x * y); }
template <class T> METAL_FUNC tm_if_int<T> mad24(T x, T y, T z) { return static_cast<T>(x * y + z); }

// ---- vector forms ------------------------------------------------------------
#define TM_IVEC1(NAME)                                                         \
  template <class V> METAL_FUNC tm_if_ivec<V> NAME(const V& v) {              \
    tm_vtype<V> r;                                                             \
    for (int i = 0; i < tm_vn<V>; ++i) r.tm_data[i] = NAME(tm_lane(v, i));     \
    return r;                                                                  \
  }
#define TM_IVEC2(NAME)                                                         \
  template <class A, class B>                                                  \
  METAL_FUNC enable_if_t<is_same_v<tm_vtype<A>, tm_vtype<B>>, tm_if_ivec<A>>   \
  NAME(const A& a, const B& b) {                                               \
    tm_vtype<A> r;                                                             \
    for (int i = 0; i < tm_vn<A>; ++i) r.tm_data[i] = NAME(tm_lane(a, i), tm_lane(b, i)); \
    return r;                                                                  \
  }
#define TM_IVEC3(NAME)                                                         \
  template <class A, class B, class C>                                         \
  METAL_FUNC enable_if_t<is_same_v<tm_vtype<A>, tm_vtype<B>> &&                \
                             is_same_v<tm_vtype<A>, tm_vtype<C>>,              \
                         tm_if_ivec<A>>                                        \
  NAME(const A& a, const B& b, const C& c) {                                   \
    tm_vtype<A> r;                                                             \
    for (int i = 0; i < tm_vn<A>; ++i)                                         \
      r.tm_data[i] = NAME(tm_lane(a, i), tm_lane(b, i), tm_lane(c, i));        \
    return r;                                                                  \
  }
TM_IVEC1(abs)
TM_IVEC1(popcount)
TM_IVEC1(clz)
TM_IVEC1(ctz)
TM_IVEC1(reverse_bits)
TM_IVEC2(min)
TM_IVEC2(max)
TM_IVEC2(addsat)
TM_IVEC2(subsat)
TM_IVEC2(hadd)
TM_IVEC2(rhadd)
TM_IVEC2(rotate)
TM_IVEC2(mulhi)
TM_IVEC2(mul24)
TM_IVEC3(clamp)
TM_IVEC3(min3)
TM_IVEC3(max3)
TM_IVEC3(median3)
TM_IVEC3(mad24)
#undef TM_IVEC1
#undef TM_IVEC2
#undef TM_IVEC3

template <class A, class B>
METAL_FUNC enable_if_t<is_same_v<tm_vtype<A>, tm_vtype<B>>,
                       tm_if_ivec<A, vec<make_unsigned_t<tm_velem<A>>, tm_vn<A>>>>
absdiff(const A& a, const B& b) {
  vec<make_unsigned_t<tm_velem<A>>, tm_vn<A>> r;
  for (int i = 0; i < tm_vn<A>; ++i) r.tm_data[i] = absdiff(tm_lane(a, i), tm_lane(b, i));
  return r;
}

}  // namespace metal
