// metal_common.h - as_type, select, all, any and metal::numeric_limits.
//
// Contract: `as_type<T>(x)` reinterprets the bytes of x (same size required,
// as in MSL); `select(a, b, c)` is `c ? b : a` per component (c a bool, or a
// boolN for vectors); `all`/`any` reduce a bool vector; numeric_limits<T>
// covers every MSL scalar type including half and bfloat.
#pragma once

#include "metal_vector.h"

namespace metal {

template <class From, bool IsVec = (tm_vn<From> > 0)> struct tm_as_value { typedef From type; };
template <class From> struct tm_as_value<From, true> { typedef tm_vtype<From> type; };

template <class To, class From>
METAL_FUNC To as_type(const From& from) {
  typedef typename tm_as_value<remove_cv_t<From>>::type V;  // a swizzle's value
  static_assert(sizeof(To) == sizeof(V),
                "as_type requires source and destination of the same size");
  V v = from;
  To to;
  __builtin_memcpy(&to, &v, sizeof(To));
  return to;
}

// select: c ? b : a.
template <class C, int N, bool IsVec = (tm_vn<C> > 0)> struct tm_select_mask {
  static constexpr bool ok = is_same_v<remove_cv_t<C>, bool>;
};
template <class C, int N> struct tm_select_mask<C, N, true> {
  static constexpr bool ok = is_same_v<tm_vtype<C>, vec<bool, N>>;
};
template <class T, enable_if_t<tm_vn<T> == 0 && is_arithmetic_v<T>, int> = 0>
METAL_FUNC T select(T a, tm_identity_t<T> b, bool c) { return c ? b : a; }
template <class A, class B, class C,
          enable_if_t<is_same_v<tm_vtype<A>, tm_vtype<B>> && tm_select_mask<C, tm_vn<A>>::ok,
                      int> = 0>
METAL_FUNC tm_vtype<A> select(const A& a, const B& b, const C& c) {
  tm_vtype<A> r;
  for (int i = 0; i < tm_vn<A>; ++i) r.tm_data[i] = tm_lane(c, i) ? tm_lane(b, i) : tm_lane(a, i);
  return r;
}

METAL_FUNC bool all(bool b) { return b; }
METAL_FUNC bool any(bool b) { return b; }
template <class V, enable_if_t<is_same_v<tm_vtype<V>, vec<bool, tm_vn<V>>>, int> = 0>
METAL_FUNC bool all(const V& v) {
  for (int i = 0; i < tm_vn<V>; ++i)
    if (!tm_lane(v, i)) return false;
  return true;
}
template <class V, enable_if_t<is_same_v<tm_vtype<V>, vec<bool, tm_vn<V>>>, int> = 0>
METAL_FUNC bool any(const V& v) {
  for (int i = 0; i < tm_vn<V>; ++i)
    if (tm_lane(v, i)) return true;
  return false;
}

// ---- numeric_limits ----------------------------------------------------------
template <class T> struct numeric_limits {
  static constexpr bool is_specialized = false;
};
template <class T, T Lo, T Hi> struct tm_int_limits {
  static constexpr bool is_specialized = true;
  static constexpr bool is_integer = true;
  static constexpr bool is_signed = is_signed_v<T>;
  static constexpr int digits = static_cast<int>(sizeof(T) * 8) - (is_signed_v<T> ? 1 : 0);
  static constexpr T min() { return Lo; }
  static constexpr T max() { return Hi; }
  static constexpr T lowest() { return Lo; }
};
template <> struct numeric_limits<bool> : tm_int_limits<bool, false, true> {};
template <> struct numeric_limits<char> : tm_int_limits<char, -128, 127> {};
template <> struct numeric_limits<signed char> : tm_int_limits<signed char, -128, 127> {};
template <> struct numeric_limits<uchar> : tm_int_limits<uchar, 0, 255> {};
template <> struct numeric_limits<short> : tm_int_limits<short, -32768, 32767> {};
template <> struct numeric_limits<ushort> : tm_int_limits<ushort, 0, 65535> {};
template <> struct numeric_limits<int> : tm_int_limits<int, -2147483647 - 1, 2147483647> {};
template <> struct numeric_limits<uint> : tm_int_limits<uint, 0u, 4294967295u> {};
template <> struct numeric_limits<long>
    : tm_int_limits<long, -9223372036854775807L - 1, 9223372036854775807L> {};
template <> struct numeric_limits<ulong> : tm_int_limits<ulong, 0ul, 18446744073709551615ul> {};

template <class T> struct tm_float_limits {
  static constexpr bool is_specialized = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_signed = true;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
};
template <> struct numeric_limits<float> : tm_float_limits<float> {
  static constexpr int digits = 24;
  static constexpr float min() { return 0x1p-126f; }
  static constexpr float max() { return 0x1.fffffep+127f; }
  static constexpr float lowest() { return -0x1.fffffep+127f; }
  static constexpr float epsilon() { return 0x1p-23f; }
  static constexpr float denorm_min() { return 0x1p-149f; }
  static constexpr float infinity() { return __builtin_inff(); }
  static constexpr float quiet_NaN() { return __builtin_nanf(""); }
};
template <> struct numeric_limits<half> : tm_float_limits<half> {
  static constexpr int digits = 11;
  static constexpr half min() { return static_cast<half>(0x1p-14f); }
  static constexpr half max() { return static_cast<half>(65504.0f); }
  static constexpr half lowest() { return static_cast<half>(-65504.0f); }
  static constexpr half epsilon() { return static_cast<half>(0x1p-10f); }
  static constexpr half denorm_min() { return static_cast<half>(0x1p-24f); }
  static constexpr half infinity() { return static_cast<half>(__builtin_inff()); }
  static constexpr half quiet_NaN() { return static_cast<half>(__builtin_nanf("")); }
};
template <> struct numeric_limits<bfloat> : tm_float_limits<bfloat> {
  static constexpr int digits = 8;
  static constexpr bfloat min() { return bfloat::tm_from_bits(0x0080); }
  static constexpr bfloat max() { return bfloat::tm_from_bits(0x7f7f); }
  static constexpr bfloat lowest() { return bfloat::tm_from_bits(0xff7f); }
  static constexpr bfloat epsilon() { return bfloat::tm_from_bits(0x3c00); }
  static constexpr bfloat denorm_min() { return bfloat::tm_from_bits(0x0001); }
  static constexpr bfloat infinity() { return bfloat::tm_from_bits(0x7f80); }
  static constexpr bfloat quiet_NaN() { return bfloat::tm_from_bits(0x7fc0); }
};
template <class T> struct numeric_limits<const T> : numeric_limits<T> {};

}  // namespace metal
