// mlx_preamble.h - the parts of MLX's kernel preamble (kernels/utils.h and
// friends, which MLX prepends to every mx.fast.metal_kernel source) that
// generated code may use.
//
// Contract: the runtime includes this after metal_stdlib and before the
// kernel. It provides float16_t, bfloat16_t, Limits<T>, WorkPerThread<T>,
// ceildiv, elem_to_loc (scalar index and uint3 forms), elem_to_loc_1/2/3,
// ConditionalType, log1p, the MTL_CONST macro and MLX's bfloat overloads of
// the math functions in metal::, metal::fast:: and metal::precise:: (they take
// and return bfloat, computing in float). MLX's 64-bit/bool simd_shuffle
// overloads and complex64_t are not provided here.
#pragma once

#include "metal_stdlib"

typedef half float16_t;
typedef bfloat bfloat16_t;

#define MTL_CONST constant

template <typename U> struct WorkPerThread {
  static_assert(sizeof(U) <= 8, "Type too large");
  static constexpr int constant n = 8 / sizeof(U);
};

template <typename U> struct Limits {
  static constexpr constant U max = metal::numeric_limits<U>::max();
  static constexpr constant U min = metal::numeric_limits<U>::min();
  static constexpr constant U finite_max = metal::numeric_limits<U>::max();
  static constexpr constant U finite_min = metal::numeric_limits<U>::min();
};
#define TM_FLOAT_LIMITS(T)                                                     \
  template <> struct Limits<T> {                                               \
    static constexpr constant T max = metal::numeric_limits<T>::infinity();    \
    static constexpr constant T min = -metal::numeric_limits<T>::infinity();   \
    static constexpr constant T finite_max = metal::numeric_limits<T>::max();  \
    static constexpr constant T finite_min = -metal::numeric_limits<T>::max(); \
  };
TM_FLOAT_LIMITS(half)
TM_FLOAT_LIMITS(float)
TM_FLOAT_LIMITS(bfloat)
#undef TM_FLOAT_LIMITS
template <> struct Limits<bool> {
  static constexpr constant bool max = true;
  static constexpr constant bool min = false;
};

template <bool condition, typename T, typename U> struct ConditionalType { using type = U; };
template <typename T, typename U> struct ConditionalType<true, T, U> { using type = T; };

template <typename T, typename U> inline T ceildiv(T N, U M) { return (N + M - 1) / M; }

template <typename IdxT = int64_t>
METAL_FUNC IdxT elem_to_loc(IdxT elem, constant const int* shape,
                            constant const int64_t* strides, int ndim) {
  IdxT loc = 0;
  for (int i = ndim - 1; i >= 0 && elem > 0; --i) {
    loc += (elem % shape[i]) * IdxT(strides[i]);
    elem /= shape[i];
  }
  return loc;
}
template <typename IdxT = int64_t>
METAL_FUNC IdxT elem_to_loc(uint3 elem, constant const int* shape,
                            constant const int64_t* strides, int ndim) {
  IdxT loc = elem.x * IdxT(strides[ndim - 1]) + elem.y * IdxT(strides[ndim - 2]);
  for (int d = ndim - 3; d >= 0; --d) {
    loc += (elem.z % shape[d]) * IdxT(strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}
template <typename IdxT = int64_t>
METAL_FUNC IdxT elem_to_loc_1(uint elem, constant const int64_t& stride) {
  return elem * IdxT(stride);
}
template <typename IdxT = int64_t>
METAL_FUNC IdxT elem_to_loc_2(uint2 elem, constant const int64_t strides[2]) {
  return elem.x * IdxT(strides[1]) + elem.y * IdxT(strides[0]);
}
template <typename IdxT = int64_t>
METAL_FUNC IdxT elem_to_loc_3(uint3 elem, constant const int64_t strides[3]) {
  return elem.x * IdxT(strides[2]) + elem.y * IdxT(strides[1]) + elem.z * IdxT(strides[0]);
}

// bfloat math as MLX declares it: bfloat in, bfloat out, float inside.
#define TM_BF1(NAME)                                                           \
  METAL_FUNC bfloat NAME(bfloat x) { return bfloat(metal::NAME(static_cast<float>(x))); }
#define TM_BF2(NAME)                                                           \
  METAL_FUNC bfloat NAME(bfloat x, bfloat y) {                                 \
    return bfloat(metal::NAME(static_cast<float>(x), static_cast<float>(y)));  \
  }
#define TM_BF3(NAME)                                                           \
  METAL_FUNC bfloat NAME(bfloat x, bfloat y, bfloat z) {                       \
    return bfloat(metal::NAME(static_cast<float>(x), static_cast<float>(y),    \
                              static_cast<float>(z)));                         \
  }
#define TM_BF_BODY                                                             \
  TM_BF1(abs) TM_BF1(acos) TM_BF1(acosh) TM_BF1(asin) TM_BF1(asinh)            \
  TM_BF1(atan) TM_BF1(atanh) TM_BF1(ceil) TM_BF1(cos) TM_BF1(cosh)             \
  TM_BF1(cospi) TM_BF1(exp) TM_BF1(exp10) TM_BF1(exp2) TM_BF1(fabs)            \
  TM_BF1(floor) TM_BF1(fract) TM_BF1(log) TM_BF1(log10) TM_BF1(log2)           \
  TM_BF1(rint) TM_BF1(round) TM_BF1(rsqrt) TM_BF1(sin) TM_BF1(sinh)            \
  TM_BF1(sinpi) TM_BF1(sqrt) TM_BF1(tan) TM_BF1(tanh) TM_BF1(tanpi)            \
  TM_BF1(trunc) TM_BF2(atan2) TM_BF2(divide) TM_BF2(fdim) TM_BF2(fmax)         \
  TM_BF2(fmin) TM_BF2(fmod) TM_BF2(max) TM_BF2(min) TM_BF2(nextafter)          \
  TM_BF2(pow) TM_BF2(powr) TM_BF3(fma) TM_BF3(fmax3) TM_BF3(fmedian3)          \
  TM_BF3(fmin3) TM_BF3(max3) TM_BF3(median3) TM_BF3(min3)
namespace metal {
TM_BF_BODY
namespace fast {
TM_BF_BODY
}  // namespace fast
namespace precise {
TM_BF_BODY
}  // namespace precise
}  // namespace metal
#undef TM_BF_BODY
#undef TM_BF1
#undef TM_BF2
#undef TM_BF3

inline float log1p(float x) {
  float xp1 = 1.0f + x;
  if (xp1 == Limits<float>::max) return Limits<float>::max;
  if (xp1 == 1.0f) return x;
  return x * (metal::log(xp1) / (xp1 - 1.0f));
}
inline bfloat16_t log1p(bfloat16_t x) { return bfloat16_t(log1p(static_cast<float>(x))); }
