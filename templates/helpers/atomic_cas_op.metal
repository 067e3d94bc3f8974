{# tl.atomic_cas: store `val` where memory holds `cmp`; returns the old value. The weak exchange
   may fail spuriously, so it retries while memory still holds `cmp`. Per type in `types`; float
   compares bit patterns through atomic_uint (-0.0 differs from 0.0, a NaN matches its own bits). #}
{% for t in types %}
{% if t == "float" %}
inline float km_atomic_cas_float(device atomic_uint* p, float cmp, float val) {
  uint expected = as_type<uint>(cmp);
  while (!atomic_compare_exchange_weak_explicit(p, &expected, as_type<uint>(val), memory_order_relaxed,
                                                memory_order_relaxed)) {
    if (expected != as_type<uint>(cmp)) {
      break;
    }
  }
  return as_type<float>(expected);
}
{% else %}
inline {{ t }} km_atomic_cas(device atomic<{{ t }}>* p, {{ t }} cmp, {{ t }} val) {
  {{ t }} expected = cmp;
  while (!atomic_compare_exchange_weak_explicit(p, &expected, val, memory_order_relaxed, memory_order_relaxed)) {
    if (expected != cmp) {
      break;
    }
  }
  return expected;
}
{% endif %}
{% endfor %}
