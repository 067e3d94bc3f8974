{# Float minimum and maximum that propagate NaN (tl.minimum/maximum with propagate_nan=ALL, which
   Triton makes exact), per float type in `types` (MSL names), with one answer for signed zeros:
   min(-0.0, +0.0) is -0.0 and max(-0.0, +0.0) is +0.0 in either order (IEEE 754-2019's
   minimum/maximum), where MSL's fmin/fmax may return either zero. Equal operands merge their
   bits: OR keeps a sign bit, AND drops it. (Plain tl.minimum/maximum are fmin/fmax, as Triton's
   min.f32/max.f32.) #}
{% for t in types %}
{% set bits = "ushort" if t == "half" else "uint" %}
inline {{ t }} km_fmin({{ t }} a, {{ t }} b) {
  return a == b ? as_type<{{ t }}>({{ bits }}(as_type<{{ bits }}>(a) | as_type<{{ bits }}>(b))) : fmin(a, b);
}
inline {{ t }} km_fmax({{ t }} a, {{ t }} b) {
  return a == b ? as_type<{{ t }}>({{ bits }}(as_type<{{ bits }}>(a) & as_type<{{ bits }}>(b))) : fmax(a, b);
}
inline {{ t }} km_fminimum({{ t }} a, {{ t }} b) { return (isnan(a) || isnan(b)) ? {{ t }}(NAN) : km_fmin(a, b); }
inline {{ t }} km_fmaximum({{ t }} a, {{ t }} b) { return (isnan(a) || isnan(b)) ? {{ t }}(NAN) : km_fmax(a, b); }
{% endfor %}
