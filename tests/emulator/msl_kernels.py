"""Hand-written Metal kernel bodies shared by the emulator's kernel tests and
`benchmarks/emulator.py`: the tests check them against NumPy, the benchmark times them.

Each is the body `metal_kernel` wraps (inputs and outputs named as in the comment above it).
"""

from __future__ import annotations

# inputs a, b (float), n (int); output out (float): out = a + b on the first n threads
VADD = "uint i = thread_position_in_grid.x;\nif (i < n) out[i] = a[i] + b[i];\n"

# inputs x (float, rows x ncols), ncols (int); output out (float): one row per threadgroup,
# max and sum reduced with SIMD reductions, then across SIMD-groups through threadgroup memory
SOFTMAX = """
uint row = threadgroup_position_in_grid.x;
uint tid = thread_position_in_threadgroup.x;
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
uint nsg = simdgroups_per_threadgroup;
uint step = threads_per_threadgroup.x;
threadgroup float partial[32];
const device float* xr = x + row * ncols;
float m = -INFINITY;
for (uint c = tid; c < ncols; c += step) m = max(m, xr[c]);
m = simd_max(m);
if (lane == 0) partial[sg] = m;
threadgroup_barrier(mem_flags::mem_threadgroup);
m = partial[0];
for (uint s = 1; s < nsg; ++s) m = max(m, partial[s]);
threadgroup_barrier(mem_flags::mem_threadgroup);
float acc = 0.0f;
for (uint c = tid; c < ncols; c += step) acc += exp(xr[c] - m);
acc = simd_sum(acc);
if (lane == 0) partial[sg] = acc;
threadgroup_barrier(mem_flags::mem_threadgroup);
float total = 0.0f;
for (uint s = 0; s < nsg; ++s) total += partial[s];
for (uint c = tid; c < ncols; c += step) out[row * ncols + c] = exp(xr[c] - m) / total;
"""
