{# Float -> integer conversion with one defined answer (docs/language.md, "Float to integer"):
   truncation toward zero, values past the type's range saturate to its minimum or maximum, NaN
   gives 0. MSL's own conversion leaves out-of-range values and NaN unspecified. The bounds are
   powers of two, exact in float: `lo` the minimum (0 unsigned), `hi` one past the maximum.
   Per type: `types` = [{c: "int", lo: "-2147483648.0f", hi: "2147483648.0f", max: "..."}]. #}
{% for t in types %}
inline {{ t.c }} km_to_{{ t.c }}(float x) {
  return isnan(x) ? {{ t.c }}(0) : x >= {{ t.hi }} ? {{ t.max }} : x <= {{ t.lo }} ? {{ t.min }} : {{ t.c }}(x);
}
{% endfor %}
