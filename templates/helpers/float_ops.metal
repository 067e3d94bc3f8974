{# NaN-propagating minimum and maximum (tl.minimum/maximum with propagate_nan), per float type
   in `types` (MSL names). #}
{% for t in types %}
inline {{ t }} km_fminimum({{ t }} a, {{ t }} b) { return (isnan(a) || isnan(b)) ? {{ t }}(NAN) : fmin(a, b); }
inline {{ t }} km_fmaximum({{ t }} a, {{ t }} b) { return (isnan(a) || isnan(b)) ? {{ t }}(NAN) : fmax(a, b); }
{% endfor %}
