{# Integer division, remainder and shifts with the results the interpreter defines where C leaves
   them undefined (docs/language.md, "Integer division"): x / 0 == 0, x % 0 == 0, MIN / -1 == MAX
   (the quotient clamped to the type's range, as the MSL specification describes division out of
   range), MIN % -1 == 0; a shift by the width or more gives 0 (or the sign for an arithmetic
   right shift). A divisor of -1 never reaches the hardware divide, which traps on MIN / -1 on
   some CPUs. Per type: `types` = [{c: "int", u: "uint", bits: 32, signed: true, min: "...",
   max: "..."}]. #}
{% for t in types %}
{% if t.signed %}
inline {{ t.c }} km_idiv({{ t.c }} a, {{ t.c }} b) {
  return b == {{ t.c }}(0) ? {{ t.c }}(0)
       : b == {{ t.c }}(-1) ? (a == {{ t.min }} ? {{ t.max }} : {{ t.c }}(-a)) : {{ t.c }}(a / b);
}
inline {{ t.c }} km_irem({{ t.c }} a, {{ t.c }} b) {
  return (b == {{ t.c }}(0) || b == {{ t.c }}(-1)) ? {{ t.c }}(0) : {{ t.c }}(a % b);
}
{% else %}
inline {{ t.c }} km_idiv({{ t.c }} a, {{ t.c }} b) { return b == {{ t.c }}(0) ? {{ t.c }}(0) : {{ t.c }}(a / b); }
inline {{ t.c }} km_irem({{ t.c }} a, {{ t.c }} b) { return b == {{ t.c }}(0) ? {{ t.c }}(0) : {{ t.c }}(a % b); }
{% endif %}
inline {{ t.c }} km_shl({{ t.c }} a, {{ t.c }} b) {
  return ({{ t.u }})b >= {{ t.bits }}u ? {{ t.c }}(0) : {{ t.c }}(({{ t.u }})a << ({{ t.u }})b);
}
inline {{ t.c }} km_shr({{ t.c }} a, {{ t.c }} b) {
{% if t.signed %}
  return ({{ t.u }})b >= {{ t.bits }}u ? {{ t.c }}(a < {{ t.c }}(0) ? -1 : 0) : {{ t.c }}(a >> b);
{% else %}
  return b >= {{ t.c }}({{ t.bits }}) ? {{ t.c }}(0) : {{ t.c }}(a >> b);
{% endif %}
}
{% endfor %}
