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
