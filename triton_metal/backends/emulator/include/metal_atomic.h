// metal_atomic.h - MSL atomics on device and threadgroup memory.
//
// Contract: atomic<T> for T = int, uint, bool, float and ulong (typedefs
// atomic_int, atomic_uint, atomic_bool, atomic_float, atomic_ulong), the same
// size and layout as T (MLX's atomic outputs point atomic<T>* at a plain
// buffer). The C11-style `_explicit` functions take a (volatile) pointer to
// an atomic and `memory_order_relaxed`, the only order MSL accepts for them;
// other orders are not declared. Which operation suits which T follows MSL:
//   int, uint: load store exchange compare_exchange_weak fetch_add/sub/and/
//              or/xor/min/max
//   float:     load store exchange compare_exchange_weak fetch_add/sub
//   bool:      load store exchange compare_exchange_weak
//   ulong:     atomic_min_explicit / atomic_max_explicit only (no return value)
// Anything else is a compile error naming the rule.
// Fences (MSL 3.2): `atomic_thread_fence(mem_flags, memory_order,
// thread_scope = thread_scope_device)` with memory_order_relaxed or
// memory_order_seq_cst, the two orders a fence takes before MSL 4.1.
// memory_order_seq_cst has a type of its own, so an atomic operation given
// it does not compile (they take relaxed only). A seq_cst fence is a full
// fence of the CPU (it orders every address space, a superset of the
// flags'); a relaxed one does nothing. Threadgroups run on
// several OS threads, so these are real atomics (GCC __atomic builtins);
// float operations are compare-and-swap loops, and float compare-exchange
// compares numerically as MSL does (so a NaN in memory never matches).
#pragma once

#include "metal_types.h"
#include "metal_sync.h"

namespace metal {

enum memory_order { memory_order_relaxed = 0 };
enum tm_fence_order { memory_order_seq_cst = 5 };
enum thread_scope {
  thread_scope_thread = 0,
  thread_scope_threadgroup = 1,
  thread_scope_device = 2,
  thread_scope_simdgroup = 4,
};

METAL_FUNC void atomic_thread_fence(mem_flags, memory_order,
                                    thread_scope = thread_scope_device) {}
METAL_FUNC void atomic_thread_fence(mem_flags, tm_fence_order,
                                    thread_scope = thread_scope_device) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

template <class T> constexpr bool tm_atomic_type =
    is_same_v<T, int> || is_same_v<T, uint> || is_same_v<T, bool> ||
    is_same_v<T, float> || is_same_v<T, ulong>;

template <class T> struct atomic {
  static_assert(tm_atomic_type<T>,
                "MSL atomics exist only for int, uint, bool, float and ulong");
  T tm_value;
  atomic() = default;
  atomic(const atomic&) = delete;
  atomic& operator=(const atomic&) = delete;
};
typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<float> atomic_float;
typedef atomic<ulong> atomic_ulong;

template <class T> constexpr bool tm_atomic_int = is_same_v<T, int> || is_same_v<T, uint>;
template <class T> constexpr bool tm_atomic_not_ulong = !is_same_v<T, ulong>;
#define TM_ATOMIC_REQUIRE(COND, WHAT)                                          \
  static_assert(COND, WHAT " is not available for this atomic type in MSL")

// Bit-pattern view of a float atomic, for compare-and-swap loops.
template <class T> METAL_FUNC volatile uint* tm_atomic_bits(volatile atomic<T>* obj) {
  return reinterpret_cast<volatile uint*>(&obj->tm_value);
}
METAL_FUNC float tm_bits_float(uint u) { return __builtin_bit_cast(float, u); }
METAL_FUNC uint tm_float_bits(float f) { return __builtin_bit_cast(uint, f); }

template <class T>
METAL_FUNC void atomic_store_explicit(volatile atomic<T>* obj, tm_identity_t<T> desired,
                                      memory_order) {
  TM_ATOMIC_REQUIRE(tm_atomic_not_ulong<T>, "atomic_store_explicit");
  __atomic_store(&obj->tm_value, &desired, __ATOMIC_RELAXED);
}

template <class T>
METAL_FUNC T atomic_load_explicit(volatile atomic<T>* obj, memory_order) {
  TM_ATOMIC_REQUIRE(tm_atomic_not_ulong<T>, "atomic_load_explicit");
  T r;
  __atomic_load(&obj->tm_value, &r, __ATOMIC_RELAXED);
  return r;
}

template <class T>
METAL_FUNC T atomic_exchange_explicit(volatile atomic<T>* obj, tm_identity_t<T> desired,
                                      memory_order) {
  TM_ATOMIC_REQUIRE(tm_atomic_not_ulong<T>, "atomic_exchange_explicit");
  T r;
  __atomic_exchange(&obj->tm_value, &desired, &r, __ATOMIC_RELAXED);
  return r;
}

template <class T>
METAL_FUNC bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* obj,
                                                      thread tm_identity_t<T>* expected,
                                                      tm_identity_t<T> desired,
                                                      memory_order, memory_order) {
  TM_ATOMIC_REQUIRE(tm_atomic_not_ulong<T>, "atomic_compare_exchange_weak_explicit");
  if constexpr (is_same_v<T, float>) {
    volatile uint* bits = tm_atomic_bits(obj);
    uint cur = __atomic_load_n(bits, __ATOMIC_RELAXED);
    for (;;) {
      if (!(tm_bits_float(cur) == *expected)) {  // numeric comparison
        *expected = tm_bits_float(cur);
        return false;
      }
      if (__atomic_compare_exchange_n(bits, &cur, tm_float_bits(desired), false,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return true;
    }
  } else {
    return __atomic_compare_exchange(&obj->tm_value, expected, &desired, false,
                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  }
}

// Read-modify-write through a compare-and-swap loop on the bits; returns the
// old value.
template <class T, class F>
METAL_FUNC T tm_atomic_rmw(volatile atomic<T>* obj, F f) {
  typedef conditional_t<sizeof(T) == 8, ulong, uint> bits_t;
  volatile bits_t* p = reinterpret_cast<volatile bits_t*>(&obj->tm_value);
  bits_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
  for (;;) {
    T old = __builtin_bit_cast(T, cur);
    bits_t next = __builtin_bit_cast(bits_t, static_cast<T>(f(old)));
    if (__atomic_compare_exchange_n(p, &cur, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return old;
  }
}

template <class T>
METAL_FUNC T atomic_fetch_add_explicit(volatile atomic<T>* obj, tm_identity_t<T> v, memory_order) {
  TM_ATOMIC_REQUIRE((tm_atomic_int<T> || is_same_v<T, float>), "atomic_fetch_add_explicit");
  if constexpr (is_same_v<T, float>) {
    return tm_atomic_rmw(obj, [v](float old) { return old + v; });
  } else {
    return __atomic_fetch_add(&obj->tm_value, v, __ATOMIC_RELAXED);
  }
}
template <class T>
METAL_FUNC T atomic_fetch_sub_explicit(volatile atomic<T>* obj, tm_identity_t<T> v, memory_order) {
  TM_ATOMIC_REQUIRE((tm_atomic_int<T> || is_same_v<T, float>), "atomic_fetch_sub_explicit");
  if constexpr (is_same_v<T, float>) {
    return tm_atomic_rmw(obj, [v](float old) { return old - v; });
  } else {
    return __atomic_fetch_sub(&obj->tm_value, v, __ATOMIC_RELAXED);
  }
}
template <class T>
METAL_FUNC T atomic_fetch_and_explicit(volatile atomic<T>* obj, tm_identity_t<T> v, memory_order) {
  TM_ATOMIC_REQUIRE(tm_atomic_int<T>, "atomic_fetch_and_explicit");
  return __atomic_fetch_and(&obj->tm_value, v, __ATOMIC_RELAXED);
}
template <class T>
METAL_FUNC T atomic_fetch_or_explicit(volatile atomic<T>* obj, tm_identity_t<T> v, memory_order) {
  TM_ATOMIC_REQUIRE(tm_atomic_int<T>, "atomic_fetch_or_explicit");
  return __atomic_fetch_or(&obj->tm_value, v, __ATOMIC_RELAXED);
}
template <class T>
METAL_FUNC T atomic_fetch_xor_explicit(volatile atomic<T>* obj, tm_identity_t<T> v, memory_order) {
  TM_ATOMIC_REQUIRE(tm_atomic_int<T>, "atomic_fetch_xor_explicit");
  return __atomic_fetch_xor(&obj->tm_value, v, __ATOMIC_RELAXED);
}
template <class T>
METAL_FUNC T atomic_fetch_min_explicit(volatile atomic<T>* obj, tm_identity_t<T> v, memory_order) {
  TM_ATOMIC_REQUIRE(tm_atomic_int<T>, "atomic_fetch_min_explicit");
  return tm_atomic_rmw(obj, [v](T old) { return v < old ? v : old; });
}
template <class T>
METAL_FUNC T atomic_fetch_max_explicit(volatile atomic<T>* obj, tm_identity_t<T> v, memory_order) {
  TM_ATOMIC_REQUIRE(tm_atomic_int<T>, "atomic_fetch_max_explicit");
  return tm_atomic_rmw(obj, [v](T old) { return old < v ? v : old; });
}

// 64-bit: non-returning min/max on atomic_ulong only.
template <class T>
METAL_FUNC void atomic_min_explicit(volatile atomic<T>* obj, tm_identity_t<T> v, memory_order) {
  TM_ATOMIC_REQUIRE((is_same_v<T, ulong>), "atomic_min_explicit");
  tm_atomic_rmw(obj, [v](T old) { return v < old ? v : old; });
}
template <class T>
METAL_FUNC void atomic_max_explicit(volatile atomic<T>* obj, tm_identity_t<T> v, memory_order) {
  TM_ATOMIC_REQUIRE((is_same_v<T, ulong>), "atomic_max_explicit");
  tm_atomic_rmw(obj, [v](T old) { return old < v ? v : old; });
}
#undef TM_ATOMIC_REQUIRE

}  // namespace metal
