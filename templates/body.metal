{# The metal_kernel body: thread ids, threadgroup scratch, per-thread coordinates, the kernel's code.
   Plain data in: threads (per program), scratch_words (16-byte words of threadgroup scratch, 0 for none),
   prologue and code (printed statements). #}
  // thread ids: one program = one threadgroup of {{ threads }} threads
  const uint tm_tid = thread_position_in_grid.x % {{ threads }}u;
  const uint tm_lane = tm_tid % 32u;
  const uint tm_warp = tm_tid / 32u;
{% if scratch_words %}
  threadgroup float4 tm_smem[{{ scratch_words }}];
{% endif %}
{{ prologue }}{{ code }}
