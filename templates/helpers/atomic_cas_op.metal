{# tl.atomic_cas: store `val` where memory holds `cmp`; returns the old value. The weak exchange
   may fail spuriously, so it retries while memory still holds `cmp`. Per type in `types`. #}
{% for t in types %}
inline {{ t }} km_atomic_cas(device atomic<{{ t }}>* p, {{ t }} cmp, {{ t }} val) {
  {{ t }} expected = cmp;
  while (!atomic_compare_exchange_weak_explicit(p, &expected, val, memory_order_relaxed, memory_order_relaxed)) {
    if (expected != cmp) {
      break;
    }
  }
  return expected;
}
{% endfor %}
