{# tl.device_assert in debug builds: the first thread whose condition is false records the
   assert's code and its program id in the status output km_assert (4 words: code, pid x, y, z).
   The status may start at any value but a code (its high half is never 0x7A5E), so the first
   failure is the compare-and-swap that moves it to a code; later failures see a code and stop. #}
inline void km_assert_fail(device uint* status, uint code, int pid_x, int pid_y, int pid_z) {
  device atomic_uint* word = (device atomic_uint*)status;
  uint seen = atomic_load_explicit(word, memory_order_relaxed);
  while ((seen & 0xFFFF0000u) != 0x7A5E0000u) {
    if (atomic_compare_exchange_weak_explicit(word, &seen, code, memory_order_relaxed, memory_order_relaxed)) {
      status[1] = uint(pid_x);
      status[2] = uint(pid_y);
      status[3] = uint(pid_z);
      return;
    }
  }
}
