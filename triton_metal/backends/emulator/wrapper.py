"""The C++ that turns an MSL kernel into something the runtime can call.

Contract: `translation_unit(source, rewritten_text, fibers)` returns the complete kernel
translation unit: the shim and runtime headers, `#line 1 "<kernel>.metal"` and the (rewritten)
MSL text, then entry points with C linkage:

- `tm_group_entry(buffers, group)` runs every thread of one threadgroup in turn (no fibers);
- `tm_thread_entry(buffers, group, index)` runs one thread (a fiber);
- `tm_kernel_main(desc)` fills in those entries and calls the runtime's `tm_launch`.

`buffers[i]` is the pointer bound to `[[buffer(i)]]` (in bounds-checked builds,
`buffers[nbuffers + i]` holds its element count, see `bounds.py`); the Metal attributes the kernel declares are
computed from the group description exactly as `dispatchThreads` defines them.
"""

from __future__ import annotations

from triton_metal.backends.emulator.bounds import element_type
from triton_metal.backends.emulator.signature import KernelSource, Param, ParamKind

# How each attribute is computed inside tm_thread (lx, ly, lz: position in the group; idx: its
# linear index; n: threads in this group; g: the tm_group_info).
_ATTRIBUTE_VALUES: dict[str, str] = {
    "thread_position_in_grid": (
        "uint3(g->gpos[0] * g->tpt[0] + lx, g->gpos[1] * g->tpt[1] + ly, g->gpos[2] * g->tpt[2] + lz)"
    ),
    "thread_position_in_threadgroup": "uint3(lx, ly, lz)",
    "threadgroup_position_in_grid": "uint3(g->gpos[0], g->gpos[1], g->gpos[2])",
    "threadgroups_per_grid": "uint3(g->ngroups[0], g->ngroups[1], g->ngroups[2])",
    "threads_per_grid": "uint3(g->grid[0], g->grid[1], g->grid[2])",
    "grid_size": "uint3(g->grid[0], g->grid[1], g->grid[2])",
    "grid_origin": "uint3(0u, 0u, 0u)",
    "threads_per_threadgroup": "uint3(g->tpt[0], g->tpt[1], g->tpt[2])",
    "dispatch_threads_per_threadgroup": "uint3(g->dtpt[0], g->dtpt[1], g->dtpt[2])",
    "thread_index_in_threadgroup": "idx",
    "simdgroup_index_in_threadgroup": "idx / 32u",
    "thread_index_in_simdgroup": "idx % 32u",
    "threads_per_simdgroup": "32u",
    "thread_execution_width": "32u",
    "simdgroups_per_threadgroup": "(g->tpt[0] * g->tpt[1] * g->tpt[2] + 31u) / 32u",
    "dispatch_simdgroups_per_threadgroup": "(g->dtpt[0] * g->dtpt[1] * g->dtpt[2] + 31u) / 32u",
    "quadgroup_index_in_threadgroup": "idx / 4u",
    "thread_index_in_quadgroup": "idx % 4u",
    "quadgroups_per_threadgroup": "(g->tpt[0] * g->tpt[1] * g->tpt[2] + 3u) / 4u",
    "dispatch_quadgroups_per_threadgroup": "(g->dtpt[0] * g->dtpt[1] * g->dtpt[2] + 3u) / 4u",
}

# The shim poisons the names MSL lacks only after the runtime's kernel header, which needs a few
# of them (double in the launch description, __builtin_memcpy).
PRELUDE = """\
#define TM_SHIM_DEFER_POISON 1
#include <metal_stdlib>
#include <mlx_preamble.h>
#include "tm_kernel.h"
#include <metal_poison.h>
using namespace metal;
"""


def _argument(param: Param, checked: frozenset[str], nbuffers: int) -> str:
    if param.kind is ParamKind.ATTRIBUTE:
        assert param.attribute is not None
        value = _ATTRIBUTE_VALUES[param.attribute]
        # MSL lets a grid-position attribute be declared uint or uint2 (its leading components);
        # MLX always writes the uint3 form, hand-written kernels often the scalar one
        if param.ctype == "uint" and value.startswith("uint3("):
            return f"({value}).x"
        if param.ctype == "uint2" and value.startswith("uint3("):
            return f"({value}).xy"
        return value
    assert param.buffer is not None
    if param.by_reference:
        return f"*({param.ctype.rstrip('&').strip()}*)b[{param.buffer}]"
    if param.name in checked:
        # a bounds-checked buffer: its element count follows the pointers in `b` (bounds.py)
        t = element_type(param)
        return (f"metal::tm_buf<{t}>{{({t}*)b[{param.buffer}], "
                f"(unsigned long)b[{nbuffers + param.buffer}], \"{param.name}\"}}")
    return f"({param.ctype})b[{param.buffer}]"


def wrapper(source: KernelSource, fibers: bool, checked: frozenset[str] = frozenset()) -> str:
    nbuffers = sum(1 for p in source.params if p.buffer is not None)
    args = ",\n        ".join(_argument(p, checked, nbuffers) for p in source.params)
    return f"""\
#define TM_EXPORT __attribute__((visibility("default")))
static inline __attribute__((always_inline)) void tm_thread(
    void** b, const tm_group_info* g, unsigned idx, unsigned lx, unsigned ly, unsigned lz) {{
    (void)b, (void)g, (void)idx, (void)lx, (void)ly, (void)lz;
    {source.instance}(
        {args});
}}

extern "C" TM_EXPORT void tm_group_entry(void** b, const tm_group_info* g) {{
    unsigned idx = 0;
    for (unsigned lz = 0; lz < g->dtpt[2]; ++lz)
        for (unsigned ly = 0; ly < g->dtpt[1]; ++ly)
            for (unsigned lx = 0; lx < g->dtpt[0]; ++lx) tm_thread(b, g, idx++, lx, ly, lz);
}}

extern "C" TM_EXPORT void tm_thread_entry(void** b, const tm_group_info* g, unsigned idx) {{
    unsigned dx = g->dtpt[0], dy = g->dtpt[1];
    tm_thread(b, g, idx, idx % dx, (idx / dx) % dy, idx / (dx * dy));
}}

extern "C" TM_EXPORT int tm_kernel_main(tm_launch_desc* d) {{
    d->group_fn = tm_group_entry;
    d->thread_fn = tm_thread_entry;
    d->use_fibers = {1 if fibers else 0};
    return tm_launch(d);
}}
"""


def translation_unit(
    source: KernelSource,
    rewritten_text: str,
    fibers: bool,
    asan: bool,
    prelude_header: str | None = None,
    checked: frozenset[str] = frozenset(),
) -> str:
    """The kernel translation unit (module doc).

    `asan` adds the `main` of a standalone program (ASan builds, and any other standalone run
    such as a cross-compiled one under qemu).

    `prelude_header` names a header holding PRELUDE (with a precompiled twin) to include instead
    of the prelude's text.
    """
    prelude = f'#include "{prelude_header}"\n' if prelude_header else PRELUDE
    parts = [
        prelude,
        f'#line 1 "{source.kernel_name}.metal"\n',
        rewritten_text,
        "\n" if not rewritten_text.endswith("\n") else "",
        f'#line 1 "{source.kernel_name}.wrapper"\n',
        wrapper(source, fibers, checked),
    ]
    if asan:
        parts.append(
            'extern "C" int tm_standalone_main(int argc, char** argv, int (*kernel_main)(tm_launch_desc*));\n'
            "int main(int argc, char** argv) { return tm_standalone_main(argc, argv, tm_kernel_main); }\n"
        )
    return "".join(parts)
