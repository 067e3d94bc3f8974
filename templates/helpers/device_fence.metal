{# A device-scope fence for Triton's acquire and release semantics on atomics (codegen
   lower_memory._emit_fence): before a releasing atomic, after an acquiring one, in the thread
   that performs it. MSL 3.2 introduced atomic_thread_fence(mem_flags, memory_order,
   thread_scope = thread_scope_device); until MSL 4.1 a fence takes memory_order_relaxed or
   memory_order_seq_cst only, so this one is seq_cst at the default device scope. The compile
   target decides (`fence`: Target.has_device_fence): for a target before MSL 3.2 the function
   is empty, nothing orders memory between threadgroups, and compiling the kernel warns
   (docs/codegen.md, "Memory order between programs"). #}
{% if fence %}
inline void km_fence_device() { atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst); }
{% else %}
inline void km_fence_device() {}
{% endif %}
