// metal_types.h - MSL scalar types, address spaces, attributes, type traits.
//
// Contract: after this header a kernel translation unit compiled with
// `g++ -std=c++17 -nostdinc -fsigned-char` sees the scalar names MSL has
// (bool char uchar short ushort int uint long ulong, int8_t..uint64_t,
// size_t, ptrdiff_t, half) at global scope, the address-space keywords
// (device constant thread threadgroup) and `kernel` as empty macros, and a
// small set of `metal::` type traits. Nothing from a C or C++ library is
// included or declared.
#pragma once

#define __METAL_VERSION__ 320
#define __HAVE_BFLOAT__ 1
#define METAL_FUNC inline __attribute__((__always_inline__))

// Address spaces carry no meaning on the CPU: every pointer is a plain
// pointer. `threadgroup` declarations inside kernels are rewritten by the
// runtime before compilation; what reaches the compiler here are only
// `threadgroup T*` parameters and pointer locals.
#define device
#define constant
#define thread
#define threadgroup
#define kernel
// MSL 3.2's coherence qualifier for buffers, `coherent(device)` (device memory
// visible across threadgroups); every other scope is a compile error naming
// the token. Memory on the CPU is coherent anyway.
#define coherent(scope) tm_coherent_##scope
#define tm_coherent_device

// MSL's `char` is signed; aarch64 Linux makes plain char unsigned.
static_assert(static_cast<char>(-1) < 0, "compile kernels with -fsigned-char");
static_assert(sizeof(long) == 8, "MSL long is 64-bit");

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
// MSL spells the 64-bit types `long`/`ulong` on every platform.
typedef long int64_t;
typedef unsigned long uint64_t;
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef __UINTPTR_TYPE__ uintptr_t;
typedef __INTPTR_TYPE__ intptr_t;

// IEEE binary16. g++ rounds every _Float16 operation back to 16 bits, as
// `half` arithmetic does. The MSL literal suffix `h` cannot be provided
// (user-defined literals need an underscore): write `half(1.0)`. Where C++
// has no _Float16 (GCC before 13 on aarch64, clang before 15 on x86-64)
// metal_half.h supplies a class with the same behaviour (TM_HALF_AS_CLASS asks
// for it on any compiler: the shim's tests check it so). One difference:
// g++ negates a _Float16 through float, which quiets a signalling NaN, where
// Metal and the class flip the sign bit; the code generator negates 16-bit
// floats on their bits, so kernels get Metal's answer either way.
#if defined(TM_HALF_AS_CLASS) || (defined(__clang__) && !defined(__FLT16_MANT_DIG__)) || \
    (!defined(__clang__) && defined(__aarch64__) && __GNUC__ < 13)
#define TM_HALF_IS_CLASS 1
#include "metal_half.h"
#else
typedef _Float16 half;
#endif

struct bfloat;

namespace metal {

template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;

template <bool B, class T, class F> struct conditional { typedef T type; };
template <class T, class F> struct conditional<false, T, F> { typedef F type; };
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;

template <class T, T v> struct integral_constant {
  static constexpr T value = v;
  constexpr operator T() const { return v; }
};
typedef integral_constant<bool, true> true_type;
typedef integral_constant<bool, false> false_type;

template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};
template <class A, class B> constexpr bool is_same_v = is_same<A, B>::value;

template <class T> struct remove_const { typedef T type; };
template <class T> struct remove_const<const T> { typedef T type; };
template <class T> struct remove_volatile { typedef T type; };
template <class T> struct remove_volatile<volatile T> { typedef T type; };
template <class T> struct remove_cv {
  typedef typename remove_volatile<typename remove_const<T>::type>::type type;
};
template <class T> using remove_cv_t = typename remove_cv<T>::type;
template <class T> struct remove_reference { typedef T type; };
template <class T> struct remove_reference<T&> { typedef T type; };
template <class T> struct remove_reference<T&&> { typedef T type; };
template <class T> using remove_reference_t = typename remove_reference<T>::type;

// Classification of the MSL scalar types (cv-qualifiers ignored).
template <class T> struct tm_int_info { static constexpr bool integral = false; };
#define TM_INT_INFO(T, S)                                                      \
  template <> struct tm_int_info<T> {                                          \
    static constexpr bool integral = true;                                     \
    static constexpr bool is_signed = S;                                       \
  };
TM_INT_INFO(bool, false)
TM_INT_INFO(char, true)
TM_INT_INFO(signed char, true)
TM_INT_INFO(unsigned char, false)
TM_INT_INFO(short, true)
TM_INT_INFO(unsigned short, false)
TM_INT_INFO(int, true)
TM_INT_INFO(unsigned int, false)
TM_INT_INFO(long, true)
TM_INT_INFO(unsigned long, false)
TM_INT_INFO(long long, true)
TM_INT_INFO(unsigned long long, false)
#undef TM_INT_INFO

template <class T> struct is_integral
    : integral_constant<bool, tm_int_info<remove_cv_t<T>>::integral> {};
template <class T> constexpr bool is_integral_v = is_integral<T>::value;

template <class T> struct is_floating_point
    : integral_constant<bool, is_same_v<remove_cv_t<T>, float> ||
                                  is_same_v<remove_cv_t<T>, half> ||
                                  is_same_v<remove_cv_t<T>, bfloat>> {};
template <class T> constexpr bool is_floating_point_v = is_floating_point<T>::value;

template <class T> struct is_arithmetic
    : integral_constant<bool, is_integral_v<T> || is_floating_point_v<T>> {};
template <class T> constexpr bool is_arithmetic_v = is_arithmetic<T>::value;

template <class T> struct is_signed
    : integral_constant<bool, is_floating_point_v<T> ||
                                  (is_integral_v<T> && tm_int_info<remove_cv_t<T>>::is_signed)> {};
template <class T> constexpr bool is_signed_v = is_signed<T>::value;
template <class T> struct is_unsigned
    : integral_constant<bool, is_integral_v<T> && !is_signed_v<T>> {};
template <class T> constexpr bool is_unsigned_v = is_unsigned<T>::value;

template <class T> struct make_unsigned { typedef T type; };
template <> struct make_unsigned<char> { typedef uchar type; };
template <> struct make_unsigned<signed char> { typedef uchar type; };
template <> struct make_unsigned<short> { typedef ushort type; };
template <> struct make_unsigned<int> { typedef uint type; };
template <> struct make_unsigned<long> { typedef ulong type; };
template <class T> using make_unsigned_t = typename make_unsigned<T>::type;
template <class T> struct make_signed { typedef T type; };
template <> struct make_signed<uchar> { typedef char type; };
template <> struct make_signed<ushort> { typedef short type; };
template <> struct make_signed<uint> { typedef int type; };
template <> struct make_signed<ulong> { typedef long type; };
template <class T> using make_signed_t = typename make_signed<T>::type;

// Scalar-or-vector traits for the runtime's SIMD-group functions: for a
// vector `vec<T, N>`, tm_scalar_traits gives is_vector = true, scalar_type = T,
// size = N; for a scalar T, is_vector = false and size = 1. Specialised in
// metal_vector.h.
template <class T> struct tm_scalar_traits {
  static constexpr bool is_vector = false;
  static constexpr int size = 1;
  typedef T scalar_type;
};

// A parameter of this type takes no part in template argument deduction.
template <class T> struct tm_identity { typedef T type; };
template <class T> using tm_identity_t = typename tm_identity<T>::type;

}  // namespace metal
