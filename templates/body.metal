{# The metal_kernel body: thread and program ids, threadgroup scratch, per-thread coordinates, the
   kernel's code. Plain data in: threads (per program), axes (program-id axes used, "x"/"y"/"z"),
   spread (programs spread over the launch grid, the logical grid in the input km_grid;
   axes and spread may be left out: none used, not spread),
   scratch_words (16-byte words of threadgroup scratch, 0 for none), prologue and code (printed
   statements). #}
  // thread ids: one program = one threadgroup of {{ threads }} threads
  const uint km_tid = thread_position_in_grid.x % {{ threads }}u;
  const uint km_lane = km_tid % 32u;
  const uint km_warp = km_tid / 32u;
{% if spread | default(false) %}
  // program ids: the programs are numbered over the whole launch grid; km_grid holds the
  // kernel's grid, and threadgroups past its end have nothing to do
  const uint km_linear = threadgroup_position_in_grid.x + threadgroups_per_grid.x *
      (threadgroup_position_in_grid.y + threadgroups_per_grid.y * threadgroup_position_in_grid.z);
  const int km_nprog_x = km_grid[0];
  const int km_nprog_y = km_grid[1];
  const int km_nprog_z = km_grid[2];
  if (km_linear >= uint(km_nprog_x) * uint(km_nprog_y) * uint(km_nprog_z)) {
    return;
  }
  const int km_pid_x = int(km_linear % uint(km_nprog_x));
  const int km_pid_y = int((km_linear / uint(km_nprog_x)) % uint(km_nprog_y));
  const int km_pid_z = int(km_linear / (uint(km_nprog_x) * uint(km_nprog_y)));
{% else %}
{% for a in axes | default([]) %}
  const int km_pid_{{ a }} = int(threadgroup_position_in_grid.{{ a }});
  const int km_nprog_{{ a }} = int(threadgroups_per_grid.{{ a }});
{% endfor %}
{% endif %}
{% if scratch_words %}
  threadgroup float4 km_smem[{{ scratch_words }}];
{% endif %}
{{ prologue }}{{ code }}
