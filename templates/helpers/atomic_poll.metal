{# tl.atomic_poll (codegen lower_memory.lower_atomic_poll): relaxed atomic reads of the aligned
   32-bit word holding the element (`shift` 0 and `mask` 0xFFFF for the low half of a 16-bit
   element, 16 for the high half; 0 and all ones for a 32-bit one) until the element's bits equal
   `expected`. Untimed, it returns only when they do. Timed, it gives up after one poll plus one
   more per 100 ns of `timeout_ns` (none when negative): MSL offers a kernel no clock, so the
   budget is counted in polls, not measured. An atomic read may not be hoisted out of the loop, so
   each iteration reads memory other threadgroups update. #}
inline bool km_atomic_poll(device atomic_uint* w, uint shift, uint mask, uint expected, bool timed, long timeout_ns) {
  long polls = timeout_ns > 0 ? timeout_ns / 100 : 0;
  for (long n = 0;; ++n) {
    if (((atomic_load_explicit(w, memory_order_relaxed) >> shift) & mask) == expected) {
      return true;
    }
    if (timed && n >= polls) {
      return false;
    }
  }
}
