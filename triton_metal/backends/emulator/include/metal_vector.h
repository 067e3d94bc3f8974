// metal_vector.h - MSL vector types vec<T, N> (N = 2, 3, 4) and their operators.
//
// Contract:
// - `vec<T, N>` and the typedefs float2..4, half2..4, bfloat2..4, int2..4, ...,
//   bool2..4 (and packed_T2..4) exist for every MSL scalar type. Size and
//   alignment follow MSL: a 3-vector occupies and aligns like a 4-vector;
//   packed vectors are dense and aligned like their element.
// - Construction: `float4()` (uninitialised, as in MSL), splat `float4(s)` and
//   `float4 v = s`, and any list of scalars and same-element vectors whose
//   component counts add up to N (`float4(v2, z, w)`, `float4(a.xy, b.xy)`).
//   Between vector types only explicit conversion (`float4(h4)`); no implicit
//   conversion.
// - Access: `v[i]`, real members .x .y .z .w / .r .g .b .a, and every 2-4
//   letter swizzle (`.xy`, `.wzyx`, `.rgba`, ...) as a proxy that converts to
//   vec<T, K>; a swizzle with distinct lanes is writable (`v.xy = ...`,
//   `v.zx += ...`), one with a repeated lane is not (compile error).
// - Operators: componentwise arithmetic, bitwise ops and shifts (integer
//   elements), comparisons giving boolN; a vector mixes with a scalar of a
//   rank that converts to the element type implicitly (an integer with any
//   vector, half with float vectors, never float with half/bfloat vectors or
//   a float with an integer vector). Mixing two vector types is an error.
// - metal::tm_scalar_traits<vec<T, N>> gives is_vector, size, scalar_type for
//   code (SIMD-group functions) that must treat scalars and vectors alike.
#pragma once

#include "metal_bfloat.h"

namespace metal {

template <class T, int N> struct vec;
template <class T, int N> struct packed_vec;
template <class T, int N, int... I> struct tm_swizzle;

// ---------------------------------------------------------------------------
// Traits: which types act as vectors (vectors, swizzle proxies, packed
// vectors), their element type and their value type vec<T, n>.
template <class X> struct tm_vtraits { static constexpr int n = 0; };
template <class T, int N> struct tm_vtraits<vec<T, N>> {
  static constexpr int n = N;
  typedef T elem;
  typedef vec<T, N> type;
};
template <class T, int N, int... I> struct tm_vtraits<tm_swizzle<T, N, I...>> {
  static constexpr int n = sizeof...(I);
  typedef T elem;
  typedef vec<T, sizeof...(I)> type;
};
template <class T, int N> struct tm_vtraits<packed_vec<T, N>> {
  static constexpr int n = N;
  typedef T elem;
  typedef vec<T, N> type;
};
template <class X> constexpr int tm_vn = tm_vtraits<remove_cv_t<X>>::n;
template <class X> using tm_vtype = typename tm_vtraits<remove_cv_t<X>>::type;
template <class X> using tm_velem = typename tm_vtraits<remove_cv_t<X>>::elem;

template <class T, int N> struct tm_scalar_traits<vec<T, N>> {
  static constexpr bool is_vector = true;
  static constexpr int size = N;
  typedef T scalar_type;
};
template <class T> struct is_vector : integral_constant<bool, tm_vn<T> != 0> {};
template <class T> constexpr bool is_vector_v = is_vector<T>::value;

// May a value of scalar type S convert implicitly to an element of type E?
// (bfloat converts implicitly only to float; nothing but integers converts
// implicitly to bfloat.)
template <class S, class E>
constexpr bool tm_implicit_scalar =
    is_arithmetic_v<S> && is_arithmetic_v<E> &&
    (is_same_v<E, bfloat> ? (is_same_v<S, bfloat> || is_integral_v<S>)
     : is_same_v<S, bfloat> ? is_same_v<E, float>
                            : true);

// May scalar S combine with a vector of E in a binary operator? Stricter than
// construction: the scalar must not outrank the element type.
template <class S, class E>
constexpr bool tm_mix_scalar =
    is_arithmetic_v<S> &&
    (is_same_v<E, bool>       ? is_same_v<S, bool>
     : is_integral_v<E>       ? is_integral_v<S>
     : is_same_v<E, float>    ? (is_integral_v<S> || is_same_v<S, float> ||
                              is_same_v<S, half> || is_same_v<S, bfloat>)
     : is_same_v<E, half>     ? (is_integral_v<S> || is_same_v<S, half>)
     : is_same_v<E, bfloat>   ? (is_integral_v<S> || is_same_v<S, bfloat>)
                              : false);

// Result vector type of a binary operator on A and B (absent: no operator).
template <class A, class B, class = void> struct tm_binary {};
template <class A, class B>
struct tm_binary<A, B,
                 enable_if_t<(tm_vn<A> > 0 && tm_vn<B> > 0 &&
                              is_same_v<tm_vtype<A>, tm_vtype<B>>)>> {
  typedef tm_vtype<A> type;
};
template <class A, class B>
struct tm_binary<A, B, enable_if_t<(tm_vn<A> > 0 && tm_vn<B> == 0 &&
                                    tm_mix_scalar<remove_cv_t<B>, tm_velem<A>>)>> {
  typedef tm_vtype<A> type;
};
template <class A, class B>
struct tm_binary<A, B, enable_if_t<(tm_vn<A> == 0 && tm_vn<B> > 0 &&
                                    tm_mix_scalar<remove_cv_t<A>, tm_velem<B>>)>> {
  typedef tm_vtype<B> type;
};
template <class A, class B> using tm_binary_t = typename tm_binary<A, B>::type;

template <class V, class R = V>
using tm_if_int_vec = enable_if_t<is_integral_v<tm_velem<V>>, R>;

// Lane i of a vector-like value, or the value itself for a scalar.
template <class T, int N>
constexpr const T& tm_lane(const vec<T, N>& v, int i) { return v.tm_data[i]; }
template <class T, int N, int... I>
constexpr T tm_lane(const tm_swizzle<T, N, I...>& s, int i) { return s[i]; }
template <class T, int N>
constexpr const T& tm_lane(const packed_vec<T, N>& v, int i) { return v.tm_data[i]; }
template <class X, enable_if_t<tm_vn<X> == 0, int> = 0>
constexpr const X& tm_lane(const X& x, int) { return x; }

template <int... I> constexpr bool tm_distinct() {
  constexpr int idx[] = {I...};
  for (int a = 0; a < static_cast<int>(sizeof...(I)); ++a)
    for (int b = a + 1; b < static_cast<int>(sizeof...(I)); ++b)
      if (idx[a] == idx[b]) return false;
  return true;
}

// Can the pieces P... build a vec<T, N>? (scalars count 1, vectors their size)
template <class T, class P, bool IsVec = (tm_vn<P> > 0)> struct tm_piece {
  static constexpr int n = 1;
  static constexpr bool ok = tm_implicit_scalar<remove_cv_t<P>, T>;
};
template <class T, class P> struct tm_piece<T, P, true> {
  static constexpr int n = tm_vn<P>;
  static constexpr bool ok = is_same_v<tm_velem<P>, T>;
};
template <class T, int N, class... P>
constexpr bool tm_pieces_ok = sizeof...(P) >= 2 && (tm_piece<T, P>::n + ... + 0) == N &&
                              (tm_piece<T, P>::ok && ...);

// ---------------------------------------------------------------------------
// Swizzle proxy: an empty member of the vector's union, so `this` is the
// address of the vector's first element. Kept to four member declarations
// because a vec4 instantiates 672 of these classes (compile time).
template <class T, int N, int... I> struct tm_swizzle {
  T operator[](int i) const;
  operator vec<T, sizeof...(I)>() const;
  tm_swizzle& operator=(const vec<T, sizeof...(I)>& v);
  tm_swizzle& operator=(const tm_swizzle& o) { return *this = tm_vtype<tm_swizzle>(o); }
};

template <class T, int N, int... I>
T tm_swizzle<T, N, I...>::operator[](int i) const {
  constexpr int idx[] = {I...};
  return reinterpret_cast<const T*>(this)[idx[i]];
}
template <class T, int N, int... I>
tm_swizzle<T, N, I...>::operator vec<T, sizeof...(I)>() const {
  const T* src = reinterpret_cast<const T*>(this);
  vec<T, sizeof...(I)> r;
  int k = 0;
  ((r.tm_data[k++] = src[I]), ...);
  return r;
}
template <class T, int N, int... I>
tm_swizzle<T, N, I...>& tm_swizzle<T, N, I...>::operator=(const vec<T, sizeof...(I)>& v) {
  static_assert(tm_distinct<I...>(), "a swizzle that repeats a component cannot be assigned");
  vec<T, sizeof...(I)> tmp = v;  // v may alias this vector
  T* dst = reinterpret_cast<T*>(this);
  int k = 0;
  ((dst[I] = tmp.tm_data[k++]), ...);
  return *this;
}

// Compound assignment to a writable swizzle: `v.xy += d`.
#define TM_SWIZZLE_COMPOUND(OP)                                                \
  template <class T, int N, int... I, class B>                                 \
  tm_swizzle<T, N, I...>& operator OP##=(tm_swizzle<T, N, I...>& s, const B& b) { \
    return s = vec<T, sizeof...(I)>(s) OP b;                                   \
  }
TM_SWIZZLE_COMPOUND(+)
TM_SWIZZLE_COMPOUND(-)
TM_SWIZZLE_COMPOUND(*)
TM_SWIZZLE_COMPOUND(/)
#undef TM_SWIZZLE_COMPOUND

// ---------------------------------------------------------------------------
// Members shared by vec<T, 2/3/4>.
#define TM_VEC_COMMON(N)                                                       \
  vec() = default;                                                             \
  constexpr vec(const vec&) = default;                                         \
  /* splat: `float4(1.0f)`, `float4 v = 0;` */                                 \
  constexpr vec(T s) : tm_data{} {                                             \
    for (int i = 0; i < N; ++i) tm_data[i] = s;                                \
  }                                                                            \
  /* pieces: `float4(x, y, z, w)`, `float4(v.xy, 0, 1)`, `{a, b}` */          \
  template <class... P, enable_if_t<tm_pieces_ok<T, N, P...>, int> = 0>        \
  constexpr vec(const P&... p) : tm_data{} {                                   \
    int k = 0;                                                                 \
    (tm_put(k, p), ...);                                                       \
  }                                                                            \
  /* explicit conversion between element types: `float4(h4)` */              \
  template <class V, enable_if_t<tm_vn<V> == N &&                              \
                                     !is_same_v<tm_velem<V>, T>, int> = 0>     \
  constexpr explicit vec(const V& o) : tm_data{} {                             \
    for (int i = 0; i < N; ++i) tm_data[i] = static_cast<T>(tm_lane(o, i));    \
  }                                                                            \
  constexpr vec& operator=(const vec& o) {                                     \
    for (int i = 0; i < N; ++i) tm_data[i] = o.tm_data[i];                     \
    return *this;                                                              \
  }                                                                            \
  constexpr T& operator[](int i) { return tm_data[i]; }                        \
  constexpr const T& operator[](int i) const { return tm_data[i]; }            \
  template <class B> constexpr vec& operator+=(const B& b) { return *this = *this + b; } \
  template <class B> constexpr vec& operator-=(const B& b) { return *this = *this - b; } \
  template <class B> constexpr vec& operator*=(const B& b) { return *this = *this * b; } \
  template <class B> constexpr vec& operator/=(const B& b) { return *this = *this / b; } \
  template <class B> constexpr vec& operator%=(const B& b) { return *this = *this % b; } \
  template <class B> constexpr vec& operator&=(const B& b) { return *this = *this & b; } \
  template <class B> constexpr vec& operator|=(const B& b) { return *this = *this | b; } \
  template <class B> constexpr vec& operator^=(const B& b) { return *this = *this ^ b; } \
  template <class B> constexpr vec& operator<<=(const B& b) { return *this = *this << b; } \
  template <class B> constexpr vec& operator>>=(const B& b) { return *this = *this >> b; } \
                                                                               \
 private:                                                                      \
  template <class P> constexpr void tm_put(int& k, const P& p) {               \
    if constexpr (tm_vn<P> == 0) {                                             \
      tm_data[k++] = static_cast<T>(p);                                        \
    } else {                                                                   \
      for (int i = 0; i < tm_vn<P>; ++i) tm_data[k++] = tm_lane(p, i);         \
    }                                                                          \
  }                                                                            \
                                                                               \
 public:

template <class T> struct alignas(2 * sizeof(T)) vec<T, 2> {
  union {
    T tm_data[2];
    struct { T x, y; };
    struct { T r, g; };
#define TM_SWIZZLE_N 2
#include "metal_swizzle.inc"
#undef TM_SWIZZLE_N
  };
  TM_VEC_COMMON(2)
};

template <class T> struct alignas(4 * sizeof(T)) vec<T, 3> {
  union {
    T tm_data[3];
    struct { T x, y, z; };
    struct { T r, g, b; };
#define TM_SWIZZLE_N 3
#include "metal_swizzle.inc"
#undef TM_SWIZZLE_N
  };
  TM_VEC_COMMON(3)
};

template <class T> struct alignas(4 * sizeof(T)) vec<T, 4> {
  union {
    T tm_data[4];
    struct { T x, y, z, w; };
    struct { T r, g, b, a; };
#define TM_SWIZZLE_N 4
#include "metal_swizzle.inc"
#undef TM_SWIZZLE_N
  };
  TM_VEC_COMMON(4)
};
#undef TM_VEC_COMMON

// Packed vectors: dense, aligned like T; convert implicitly to and from the
// vector of the same element type and take part in arithmetic as one.
#define TM_PACKED_COMMON(N)                                                    \
  packed_vec() = default;                                                      \
  constexpr packed_vec(const vec<T, N>& v) : tm_data{} {                       \
    for (int i = 0; i < N; ++i) tm_data[i] = v.tm_data[i];                     \
  }                                                                            \
  template <class... P, enable_if_t<tm_pieces_ok<T, N, P...>, int> = 0>        \
  constexpr packed_vec(const P&... p) : packed_vec(vec<T, N>(p...)) {}         \
  constexpr operator vec<T, N>() const {                                       \
    vec<T, N> r;                                                               \
    for (int i = 0; i < N; ++i) r.tm_data[i] = tm_data[i];                     \
    return r;                                                                  \
  }                                                                            \
  constexpr T& operator[](int i) { return tm_data[i]; }                        \
  constexpr const T& operator[](int i) const { return tm_data[i]; }

template <class T> struct packed_vec<T, 2> {
  union { T tm_data[2]; struct { T x, y; }; struct { T r, g; }; };
  TM_PACKED_COMMON(2)
};
template <class T> struct packed_vec<T, 3> {
  union { T tm_data[3]; struct { T x, y, z; }; struct { T r, g, b; }; };
  TM_PACKED_COMMON(3)
};
template <class T> struct packed_vec<T, 4> {
  union { T tm_data[4]; struct { T x, y, z, w; }; struct { T r, g, b, a; }; };
  TM_PACKED_COMMON(4)
};
#undef TM_PACKED_COMMON

// ---------------------------------------------------------------------------
// Operators (found by argument-dependent lookup on metal:: types).
#define TM_VEC_ARITH(OP, EXTRA)                                                \
  template <class A, class B, class V = tm_binary_t<A, B>, EXTRA>              \
  constexpr V operator OP(const A& a, const B& b) {                            \
    V r;                                                                       \
    for (int i = 0; i < tm_vn<V>; ++i)                                         \
      r.tm_data[i] = static_cast<tm_velem<V>>(tm_lane(a, i) OP tm_lane(b, i)); \
    return r;                                                                  \
  }
#define TM_ANY class = void
#define TM_INT_ONLY class = tm_if_int_vec<V>
TM_VEC_ARITH(+, TM_ANY)
TM_VEC_ARITH(-, TM_ANY)
TM_VEC_ARITH(*, TM_ANY)
TM_VEC_ARITH(/, TM_ANY)
TM_VEC_ARITH(%, TM_INT_ONLY)
TM_VEC_ARITH(&, TM_INT_ONLY)
TM_VEC_ARITH(|, TM_INT_ONLY)
TM_VEC_ARITH(^, TM_INT_ONLY)
TM_VEC_ARITH(<<, TM_INT_ONLY)
TM_VEC_ARITH(>>, TM_INT_ONLY)
#undef TM_VEC_ARITH
#undef TM_ANY
#undef TM_INT_ONLY

#define TM_VEC_CMP(OP)                                                         \
  template <class A, class B, class V = tm_binary_t<A, B>>                     \
  constexpr vec<bool, tm_vn<V>> operator OP(const A& a, const B& b) {          \
    vec<bool, tm_vn<V>> r;                                                     \
    for (int i = 0; i < tm_vn<V>; ++i) r.tm_data[i] = tm_lane(a, i) OP tm_lane(b, i); \
    return r;                                                                  \
  }
TM_VEC_CMP(==)
TM_VEC_CMP(!=)
TM_VEC_CMP(<)
TM_VEC_CMP(<=)
TM_VEC_CMP(>)
TM_VEC_CMP(>=)
#undef TM_VEC_CMP

template <class A, class V = tm_vtype<A>>
constexpr V operator-(const A& a) {
  V r;
  for (int i = 0; i < tm_vn<V>; ++i) r.tm_data[i] = static_cast<tm_velem<V>>(-tm_lane(a, i));
  return r;
}
template <class A, class V = tm_vtype<A>>
constexpr V operator+(const A& a) { return V(a); }
template <class A, class V = tm_vtype<A>, class = tm_if_int_vec<V>>
constexpr V operator~(const A& a) {
  V r;
  for (int i = 0; i < tm_vn<V>; ++i) r.tm_data[i] = static_cast<tm_velem<V>>(~tm_lane(a, i));
  return r;
}
template <class A, class V = tm_vtype<A>>
constexpr vec<bool, tm_vn<V>> operator!(const A& a) {
  vec<bool, tm_vn<V>> r;
  for (int i = 0; i < tm_vn<V>; ++i) r.tm_data[i] = !tm_lane(a, i);
  return r;
}

}  // namespace metal

// ---------------------------------------------------------------------------
// MSL names of the vector types (global, and also metal::float4 etc.).
#define TM_VEC_TYPEDEFS(S)                                                     \
  typedef metal::vec<S, 2> S##2;                                               \
  typedef metal::vec<S, 3> S##3;                                               \
  typedef metal::vec<S, 4> S##4;                                               \
  typedef metal::packed_vec<S, 2> packed_##S##2;                               \
  typedef metal::packed_vec<S, 3> packed_##S##3;                               \
  typedef metal::packed_vec<S, 4> packed_##S##4;                               \
  namespace metal {                                                            \
  using ::S##2;                                                                \
  using ::S##3;                                                                \
  using ::S##4;                                                                \
  using ::packed_##S##2;                                                       \
  using ::packed_##S##3;                                                       \
  using ::packed_##S##4;                                                       \
  }
TM_VEC_TYPEDEFS(bool)
TM_VEC_TYPEDEFS(char)
TM_VEC_TYPEDEFS(uchar)
TM_VEC_TYPEDEFS(short)
TM_VEC_TYPEDEFS(ushort)
TM_VEC_TYPEDEFS(int)
TM_VEC_TYPEDEFS(uint)
TM_VEC_TYPEDEFS(long)
TM_VEC_TYPEDEFS(ulong)
TM_VEC_TYPEDEFS(half)
TM_VEC_TYPEDEFS(float)
TM_VEC_TYPEDEFS(bfloat)
#undef TM_VEC_TYPEDEFS

using metal::vec;
