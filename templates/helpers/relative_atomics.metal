{# Atomics on an output kept relative to its array's contents (CodegenOptions.relative_outputs)
   that the held difference does not carry as they are: a compare-and-swap loop that decodes
   the held value against the element's old value `o`, applies the operation exactly as the
   in-place atomic does (templates/helpers/atomic_cas.metal, atomic_half_word.metal; float
   max/min by the bits' total order, atomic_bit_order.metal), encodes
   the result and swaps it in if nothing changed meanwhile. Each returns the element's old
   value. "xor" holds `v ^ o`, "sub" the wrapping `v - o` (kernel.relative_encoding).
   32-bit: `ops32` = [{c: "float", op: "max", enc: "xor"}] on the word as atomic_uint.
   "mark" (float atomic adds only, kernel.marks_untouched): the output holds the element's own
   value, or `untouched` (a quiet NaN's bits) while its value is its old value `o`. The first add
   swaps in `o + v`; from then on the output holds the element's value, and every add of
   numbers to a number is the hardware's atomic add, exactly as in place (NaNs take the loop).
   Only a sum whose bits are the mark while `o`'s are not (an operand NaN carrying the mark's
   payload) is stored as the neighbouring quiet NaN instead.
   16-bit: `ops16` = [{t: "half", op: "add"}] on the aligned word holding the element (`shift`
   0 for the low half, 16 for the high one), always "xor". #}
{% macro next32(c, op) -%}
{% if op == "add" and c == "float" %}old + v
{%- elif op == "add" %}as_type<{{ c }}>(as_type<uint>(old) + as_type<uint>(v))
{%- elif op == "max" and c == "float" %}km_bit_order(old) >= km_bit_order(v) ? old : v
{%- elif op == "min" and c == "float" %}km_bit_order(old) <= km_bit_order(v) ? old : v
{%- elif op == "max" %}max(old, v)
{%- elif op == "min" %}min(old, v)
{%- elif op == "and" %}old & v
{%- elif op == "or" %}old | v
{%- elif op == "xor" %}old ^ v
{%- else %}v
{%- endif %}
{%- endmacro %}
{% for a in ops32 %}
{% if a.enc == "mark" %}
inline float km_rel_add_float_mark(device atomic_uint* p, float v, float o) {
  // first as if untouched: one compare-and-swap where the element still holds the mark
  uint held = {{ untouched }}u;
  while (true) {
    if (held != {{ untouched }}u && !isnan(as_type<float>(held)) && !isnan(v)) {
      // a number plus a number is never the mark: the hardware's add, as in place
      return atomic_fetch_add_explicit((device atomic<float>*)p, v, memory_order_relaxed);
    }
    float old = held == {{ untouched }}u ? o : as_type<float>(held);
    uint next = as_type<uint>(old + v);
    // the mark stands for `o`: a sum with its bits is stored as it is only when it is `o`
    next = next == {{ untouched }}u && as_type<uint>(o) != next ? next ^ 1u : next;
    if (atomic_compare_exchange_weak_explicit(p, &held, next, memory_order_relaxed, memory_order_relaxed)) {
      return old;
    }
  }
}
{% else %}
inline {{ a.c }} km_rel_{{ a.op }}_{{ a.c }}_{{ a.enc }}(device atomic_uint* p, {{ a.c }} v, {{ a.c }} o) {
  uint held = atomic_load_explicit(p, memory_order_relaxed);
  while (true) {
{% if a.enc == "xor" %}
    {{ a.c }} old = as_type<{{ a.c }}>(held ^ as_type<uint>(o));
    uint next = as_type<uint>({{ a.c }}({{ next32(a.c, a.op) }})) ^ as_type<uint>(o);
{% else %}
    {{ a.c }} old = as_type<{{ a.c }}>(held + as_type<uint>(o));
    uint next = as_type<uint>({{ a.c }}({{ next32(a.c, a.op) }})) - as_type<uint>(o);
{% endif %}
    if (atomic_compare_exchange_weak_explicit(p, &held, next, memory_order_relaxed, memory_order_relaxed)) {
      return old;
    }
  }
}
{% endif %}
{% endfor %}
{% for a in ops16 %}
{% set t = a.t %}
{% if a.op == "cas" %}
inline {{ t }} km_rel16_cas_{{ t }}(device atomic_uint* w, uint shift, {{ t }} cmp, {{ t }} val, {{ t }} o) {
{% elif a.op in ("max", "min") %}
inline {{ t }} km_rel16_{{ a.op }}_{{ t }}(device atomic_uint* w, uint shift, {{ t }} v, {{ t }} o) {
{% else %}
inline {{ t }} km_rel16_{{ a.op }}_{{ t }}(device atomic_uint* w, uint shift, float v, {{ t }} o) {
{% endif %}
  uint word = atomic_load_explicit(w, memory_order_relaxed);
  ushort ob = as_type<ushort>(o);
  while (true) {
    {{ t }} old = as_type<{{ t }}>(ushort(ushort(word >> shift) ^ ob));
{% if a.op == "cas" %}
    if (as_type<ushort>(old) != as_type<ushort>(cmp)) {
      return old;
    }
    {{ t }} next = val;
{% elif a.op == "max" %}
    if (km_bit_order(old) >= km_bit_order(v)) {
      return old;
    }
    {{ t }} next = v;
{% elif a.op == "min" %}
    if (km_bit_order(old) <= km_bit_order(v)) {
      return old;
    }
    {{ t }} next = v;
{% elif a.op == "add" %}
    {{ t }} next = {{ t }}(float(old) + v);
{% else %}
    {{ t }} next = {{ t }}(v);
{% endif %}
    uint bits = uint(ushort(as_type<ushort>(next) ^ ob)) << shift;
    if (atomic_compare_exchange_weak_explicit(w, &word, (word & ~(0xFFFFu << shift)) | bits, memory_order_relaxed,
                                              memory_order_relaxed)) {
      return old;
    }
  }
}
{% endfor %}
