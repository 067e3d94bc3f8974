{# Float atomic max and min as Triton lowers them: integer atomics on the bit patterns, a signed
   max (min) where the operand's sign bit is clear and an unsigned min (max) where it is set, on
   the element viewed as atomic_uint. Floats are so ordered by IEEE totalOrder (+0.0 above -0.0,
   a NaN by its sign and payload: see atomic_bit_order.metal), every bit kept. Returns the old
   value. #}
inline float km_atomic_fmax(device atomic_uint* p, float v) {
  uint b = as_type<uint>(v);
  if (b >> 31) {
    return as_type<float>(atomic_fetch_min_explicit(p, b, memory_order_relaxed));
  }
  return as_type<float>(atomic_fetch_max_explicit((device atomic_int*)p, as_type<int>(b), memory_order_relaxed));
}
inline float km_atomic_fmin(device atomic_uint* p, float v) {
  uint b = as_type<uint>(v);
  if (b >> 31) {
    return as_type<float>(atomic_fetch_max_explicit(p, b, memory_order_relaxed));
  }
  return as_type<float>(atomic_fetch_min_explicit((device atomic_int*)p, as_type<int>(b), memory_order_relaxed));
}
