{# The metal_kernel body: thread and program ids, threadgroup scratch, per-thread coordinates, the
   kernel's code. Plain data in: threads (per program), axes (program-id axes used, "x"/"y"/"z"),
   spread (programs spread over the launch grid, the logical grid in the input tm_grid_in;
   axes and spread may be left out: none used, not spread),
   scratch_words (16-byte words of threadgroup scratch, 0 for none), prologue and code (printed
   statements). #}
  // thread ids: one program = one threadgroup of {{ threads }} threads
  const uint tm_tid = thread_position_in_grid.x % {{ threads }}u;
  const uint tm_lane = tm_tid % 32u;
  const uint tm_warp = tm_tid / 32u;
{% if spread | default(false) %}
  // program ids: the programs are numbered over the whole launch grid; tm_grid_in holds the
  // kernel's grid, and threadgroups past its end have nothing to do
  const uint tm_linear = threadgroup_position_in_grid.x + threadgroups_per_grid.x *
      (threadgroup_position_in_grid.y + threadgroups_per_grid.y * threadgroup_position_in_grid.z);
  const int tm_nprog_x = tm_grid_in[0];
  const int tm_nprog_y = tm_grid_in[1];
  const int tm_nprog_z = tm_grid_in[2];
  if (tm_linear >= uint(tm_nprog_x) * uint(tm_nprog_y) * uint(tm_nprog_z)) {
    return;
  }
  const int tm_pid_x = int(tm_linear % uint(tm_nprog_x));
  const int tm_pid_y = int((tm_linear / uint(tm_nprog_x)) % uint(tm_nprog_y));
  const int tm_pid_z = int(tm_linear / (uint(tm_nprog_x) * uint(tm_nprog_y)));
{% else %}
{% for a in axes | default([]) %}
  const int tm_pid_{{ a }} = int(threadgroup_position_in_grid.{{ a }});
  const int tm_nprog_{{ a }} = int(threadgroups_per_grid.{{ a }});
{% endfor %}
{% endif %}
{% if scratch_words %}
  threadgroup float4 tm_smem[{{ scratch_words }}];
{% endif %}
{{ prologue }}{{ code }}
