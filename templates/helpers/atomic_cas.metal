{# Float atomic max and min, which MSL lacks, as compare-and-swap loops on device atomic<float>.
   Returns the old value. A NaN in memory never compares equal, so the loop stops on it. #}
inline float km_atomic_fmax(device atomic<float>* p, float v) {
  float old = atomic_load_explicit(p, memory_order_relaxed);
  while (!(old >= v) && !isnan(old)) {
    if (atomic_compare_exchange_weak_explicit(p, &old, v, memory_order_relaxed, memory_order_relaxed)) {
      break;
    }
  }
  return old;
}
inline float km_atomic_fmin(device atomic<float>* p, float v) {
  float old = atomic_load_explicit(p, memory_order_relaxed);
  while (!(old <= v) && !isnan(old)) {
    if (atomic_compare_exchange_weak_explicit(p, &old, v, memory_order_relaxed, memory_order_relaxed)) {
      break;
    }
  }
  return old;
}
