{# Outputs kept relative to their array's contents (CodegenOptions.relative_outputs): such an
   output starts at zero and holds, for each element, its value relative to the array's old
   value `o` (the extra input `<param>_old`). "xor": the bitwise difference, its own inverse;
   "sub": the wrapping difference of an integer, undone by a wrapping add. Both work on the
   element's bits as an unsigned integer of its width, where wrapping is defined.
   Per type: `types` = [{c: "float", u: "uint"}]. #}
{% for t in types %}
inline {{ t.c }} km_rel_xor({{ t.c }} a, {{ t.c }} o) {
  return as_type<{{ t.c }}>({{ t.u }}(as_type<{{ t.u }}>(a) ^ as_type<{{ t.u }}>(o)));
}
inline {{ t.c }} km_rel_sub({{ t.c }} a, {{ t.c }} o) {
  return as_type<{{ t.c }}>({{ t.u }}(as_type<{{ t.u }}>(a) - as_type<{{ t.u }}>(o)));
}
inline {{ t.c }} km_rel_add({{ t.c }} a, {{ t.c }} o) {
  return as_type<{{ t.c }}>({{ t.u }}(as_type<{{ t.u }}>(a) + as_type<{{ t.u }}>(o)));
}
{% endfor %}
{# "key" outputs (kernel.keeps_key): an element holds `v ^ K`, so 0 stands for the old
   value, or for K itself where the element's byte in the escape output `esc` is set. A load
   reads the old value and the escape byte only where it finds 0; a store of K sets the byte.
   The bytes are read and set through the 32-bit word holding them, atomically: programs that
   exchange the array see them as they see the array (the output holds whole words).
   Per type: `keys` = [{c: "float", u: "uint", key: "0x7FD5A5A5"}]. #}
{% if keys %}
// the 32-bit word holding escape byte `off` (the output holds whole words)
template <typename I>
inline device atomic_uint* km_rel_escape_word(device uchar* esc, I off) {
  return (device atomic_uint*)(esc + (off & ~I(3)));
}
{% endif %}
{% for t in keys %}
inline {{ t.c }} km_rel_key({{ t.c }} v) {
  return as_type<{{ t.c }}>({{ t.u }}(as_type<{{ t.u }}>(v) ^ {{ t.u }}({{ t.key }})));
}
inline bool km_rel_is_key({{ t.c }} v) {
  return as_type<{{ t.u }}>(v) == {{ t.u }}({{ t.key }});
}
template <typename P, typename I>
inline {{ t.c }} km_rel_unkey({{ t.c }} held, P old, device uchar* esc, I off) {
  if (as_type<{{ t.u }}>(held) != {{ t.u }}(0)) {
    return km_rel_key(held);
  }
  const uint word = atomic_load_explicit(km_rel_escape_word(esc, off), memory_order_relaxed);
  return ((word >> (8u * uint(off & 3))) & 0xFFu) != 0u ? as_type<{{ t.c }}>({{ t.u }}({{ t.key }})) : {{ t.c }}(old[off]);
}
template <typename I>
inline void km_rel_escape({{ t.c }} v, device uchar* esc, I off) {
  if (km_rel_is_key(v)) {
    atomic_fetch_or_explicit(km_rel_escape_word(esc, off), 1u << (8u * uint(off & 3)), memory_order_relaxed);
  }
}
{% endfor %}
