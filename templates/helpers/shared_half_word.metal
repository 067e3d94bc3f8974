{# Relaxed atomic loads and stores of the 16-bit elements of an array that other programs of
   the launch write (codegen `Buffer.shared`), through the aligned 32-bit word holding the
   element (`shift` 0 for the low half, 16 for the high one). Atomic accesses are coherent
   across the device where plain ones are only coherent within a threadgroup. A store is a
   compare-and-swap that keeps the word's other half, which another thread may be writing; bit
   patterns pass unchanged (no conversion through float). #}
inline ushort km_shared_load16(device atomic_uint* w, uint shift) {
  return ushort(atomic_load_explicit(w, memory_order_relaxed) >> shift);
}
inline void km_shared_store16(device atomic_uint* w, uint shift, ushort bits) {
  uint word = atomic_load_explicit(w, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(w, &word, (word & ~(0xFFFFu << shift)) | (uint(bits) << shift),
                                                memory_order_relaxed, memory_order_relaxed)) {
  }
}
