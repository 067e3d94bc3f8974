// Atomics in single-threaded sequences (return values) and under contention, called from
// test_shim_atomic.py. Sequences record every returned value in `log`.

extern "C" int int_sequence(device atomic_int* a, int* log) {
  int k = 0;
  atomic_store_explicit(a, 10, memory_order_relaxed);
  log[k++] = atomic_load_explicit(a, memory_order_relaxed);          // 10
  log[k++] = atomic_fetch_add_explicit(a, 5, memory_order_relaxed);   // 10 -> 15
  log[k++] = atomic_fetch_sub_explicit(a, 20, memory_order_relaxed);  // 15 -> -5
  log[k++] = atomic_fetch_max_explicit(a, 3, memory_order_relaxed);   // -5 -> 3
  log[k++] = atomic_fetch_min_explicit(a, -7, memory_order_relaxed);  // 3 -> -7
  log[k++] = atomic_fetch_and_explicit(a, 0xFF, memory_order_relaxed);  // -7 -> 0xF9
  log[k++] = atomic_fetch_or_explicit(a, 0x100, memory_order_relaxed);  // 0xF9 -> 0x1F9
  log[k++] = atomic_fetch_xor_explicit(a, 0x1, memory_order_relaxed);   // 0x1F9 -> 0x1F8
  log[k++] = atomic_exchange_explicit(a, 42, memory_order_relaxed);     // 0x1F8 -> 42
  int expected = 41;
  log[k++] = atomic_compare_exchange_weak_explicit(a, &expected, 7, memory_order_relaxed,
                                                   memory_order_relaxed);  // fails
  log[k++] = expected;  // 42, the value found
  bool ok = false;
  for (int tries = 0; tries < 100 && !ok; ++tries)  // weak: may fail spuriously
    ok = atomic_compare_exchange_weak_explicit(a, &expected, 7, memory_order_relaxed,
                                               memory_order_relaxed);
  log[k++] = ok;
  log[k++] = atomic_load_explicit(a, memory_order_relaxed);  // 7
  return k;
}

extern "C" int uint_sequence(device atomic_uint* a, uint* log) {
  int k = 0;
  atomic_store_explicit(a, 1u, memory_order_relaxed);
  log[k++] = atomic_fetch_sub_explicit(a, 2u, memory_order_relaxed);  // 1 -> 0xFFFFFFFF
  log[k++] = atomic_fetch_max_explicit(a, 5u, memory_order_relaxed);  // unsigned: stays
  log[k++] = atomic_fetch_min_explicit(a, 5u, memory_order_relaxed);  // -> 5
  log[k++] = atomic_fetch_add_explicit(a, 0xFFFFFFFEu, memory_order_relaxed);  // wraps to 3
  log[k++] = atomic_load_explicit(a, memory_order_relaxed);
  return k;
}

extern "C" int float_sequence(device atomic_float* a, float* log) {
  int k = 0;
  atomic_store_explicit(a, 1.5f, memory_order_relaxed);
  log[k++] = atomic_fetch_add_explicit(a, 2.25f, memory_order_relaxed);  // 1.5 -> 3.75
  log[k++] = atomic_fetch_sub_explicit(a, 0.75f, memory_order_relaxed);  // 3.75 -> 3
  log[k++] = atomic_exchange_explicit(a, -0.0f, memory_order_relaxed);   // 3 -> -0
  // Float compare-exchange compares numerically: +0 matches a stored -0.
  float expected = 0.0f;
  bool ok = false;
  for (int tries = 0; tries < 100 && !ok; ++tries)
    ok = atomic_compare_exchange_weak_explicit(a, &expected, 8.0f, memory_order_relaxed,
                                               memory_order_relaxed);
  log[k++] = ok;
  log[k++] = atomic_load_explicit(a, memory_order_relaxed);  // 8
  // A NaN in memory never matches, not even a NaN expected value.
  atomic_store_explicit(a, __builtin_nanf(""), memory_order_relaxed);
  expected = __builtin_nanf("");
  log[k++] = atomic_compare_exchange_weak_explicit(a, &expected, 1.0f, memory_order_relaxed,
                                                   memory_order_relaxed);
  log[k++] = isnan(expected);
  log[k++] = isnan(atomic_load_explicit(a, memory_order_relaxed));
  return k;
}

extern "C" int bool_ulong_sequence(device atomic_bool* b, device atomic_ulong* u, ulong* log) {
  int k = 0;
  atomic_store_explicit(b, false, memory_order_relaxed);
  log[k++] = atomic_exchange_explicit(b, true, memory_order_relaxed);  // false
  log[k++] = atomic_load_explicit(b, memory_order_relaxed);            // true
  u->tm_value = 100;  // atomic_ulong has no store: MLX fills the buffer (init_value)
  atomic_max_explicit(u, 0xFFFFFFFFFFull, memory_order_relaxed);
  log[k++] = u->tm_value;
  atomic_min_explicit(u, 7ul, memory_order_relaxed);
  log[k++] = u->tm_value;
  return k;
}

// Contention: called from several OS threads at once.
extern "C" void hammer_int(volatile device atomic_int* a, int iterations) {
  for (int i = 0; i < iterations; ++i) atomic_fetch_add_explicit(a, 1, memory_order_relaxed);
}
extern "C" void hammer_float(device atomic_float* a, int iterations) {
  for (int i = 0; i < iterations; ++i) atomic_fetch_add_explicit(a, 1.0f, memory_order_relaxed);
}
extern "C" void hammer_max(device atomic_uint* a, uint base, int iterations) {
  for (int i = 0; i < iterations; ++i)
    atomic_fetch_max_explicit(a, base + uint(i), memory_order_relaxed);
}
// Threadgroup-style use: an atomic counter in an array of atomics.
extern "C" void histogram(const uint* keys, int n, threadgroup atomic_uint* bins) {
  for (int i = 0; i < n; ++i) atomic_fetch_add_explicit(&bins[keys[i] % 16u], 1u, memory_order_relaxed);
}
