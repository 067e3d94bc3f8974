{# half and bfloat atomics, which MSL lacks, as compare-and-swap loops on the aligned 32-bit word
   holding the element (`w`; `shift` 0 for the low half, 16 for the high one). The operation runs
   in float and rounds once to the element type; the other half of the word is written back as
   it was read, so a neighbour's concurrent update makes the exchange fail and retry. Each returns
   the element's old value. max/min take the operand in the element type and keep the greater
   (lesser) by the bit patterns' total order, as float32 does (atomic_bit_order.metal), every
   bit kept; cas compares bit patterns. #}
{% for t in ("half", "bfloat") %}
inline {{ t }} km_bits_{{ t }}(uint word, uint shift) { return as_type<{{ t }}>(ushort(word >> shift)); }
inline uint km_with_{{ t }}(uint word, uint shift, {{ t }} v) {
  return (word & ~(0xFFFFu << shift)) | (uint(as_type<ushort>(v)) << shift);
}
{% for op, vt, expr, skip in (("add", "float", "float(old) + v", "false"), ("max", t, "v", "km_bit_order(old) >= km_bit_order(v)"), ("min", t, "v", "km_bit_order(old) <= km_bit_order(v)"), ("xchg", "float", "v", "false")) %}
inline {{ t }} km_atomic16_{{ op }}_{{ t }}(device atomic_uint* w, uint shift, {{ vt }} v) {
  uint word = atomic_load_explicit(w, memory_order_relaxed);
  while (true) {
    {{ t }} old = km_bits_{{ t }}(word, shift);
    if ({{ skip }}) {
      return old;
    }
    uint next = km_with_{{ t }}(word, shift, {{ t }}({{ expr }}));
    if (atomic_compare_exchange_weak_explicit(w, &word, next, memory_order_relaxed, memory_order_relaxed)) {
      return old;
    }
  }
}
{% endfor %}
inline {{ t }} km_atomic16_cas_{{ t }}(device atomic_uint* w, uint shift, {{ t }} cmp, {{ t }} val) {
  uint word = atomic_load_explicit(w, memory_order_relaxed);
  while (true) {
    {{ t }} old = km_bits_{{ t }}(word, shift);
    if (as_type<ushort>(old) != as_type<ushort>(cmp)) {
      return old;
    }
    if (atomic_compare_exchange_weak_explicit(w, &word, km_with_{{ t }}(word, shift, val), memory_order_relaxed,
                                              memory_order_relaxed)) {
      return old;
    }
  }
}
{% endfor %}
