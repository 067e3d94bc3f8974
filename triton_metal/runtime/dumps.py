"""What a compile shows under `TRITON_METAL_DEBUG` and writes under `TRITON_METAL_DUMP_DIR`.

Levels (the IR after every pass is the pass pipeline's own dump, `passes/debug_dump.py`):
* 2: the op-to-MSL mapping on stderr: each kernel source line (from the MSL's `#line`
  directives) followed by the MSL it became;
* 3: the full MSL as MLX will compile it (header, the signature `mx.fast.metal_kernel` writes,
  the body) and the hardware: the chip (Metal) or the emulator's host.

Files: at level 2 or more, or whenever `TRITON_METAL_DUMP_DIR` is set, the folder
`<dump dir>/<MSL kernel name>/` (default dump dir `~/.triton/metal/shaders`) receives
`kernel.metal` (the MSL as MLX will compile it, every array input in device memory),
`body.metal`, `header.metal` and `launch.json` (the launch metadata: inputs, outputs, parameter
bindings, threads per program, coverage, threadgroup memory, the specialization). The Metal
driver adds to `launch.json`, under "coverage_verdicts", the verdict of every new (grid,
scalars, sizes) it checks: per output, proven or not and why (`record_coverage`).
"""

from __future__ import annotations

import json
import linecache
import os
import platform
import re
from pathlib import Path
from typing import Any

from ..chip import MAX_THREADS_PER_THREADGROUP, SIMD_WIDTH, THREADGROUP_MEMORY_BYTES, chip_info
from .log import log

DEFAULT_DUMP_DIR = "~/.triton/metal/shaders"
_LINE = re.compile(r'^\s*#line (\d+) "([^"]*)"\s*$')


def dump_dir(level: int) -> Path | None:
    explicit = os.environ.get("TRITON_METAL_DUMP_DIR")
    if explicit:
        return Path(explicit).expanduser()
    if level >= 2:
        return Path(DEFAULT_DUMP_DIR).expanduser()
    return None


def mlx_source(msl: Any) -> str:
    """The kernel text `mx.fast.metal_kernel` builds for this MSLKernel (array inputs in device
    memory, scalars as 0-d inputs)."""
    from ..backends.emulator.signature import InputSpec, OutputSpec, build_kernel_source

    scalars = {n for p in msl.params if p.kind == "scalar" for n in p.msl_inputs}
    dtypes = {n: p.dtype for p in msl.params for n in (*p.msl_inputs, *p.msl_outputs)}
    grid_input = msl.metadata.get("grid_input")
    inputs = []
    for n in msl.input_names:
        if n == grid_input:
            inputs.append(InputSpec(n, "int32_t", 1, 3))
        elif n in scalars:
            inputs.append(InputSpec(n, dtypes[n], 0, 1))
        else:
            inputs.append(InputSpec(n, dtypes[n], 1, 1024))
    outputs = [OutputSpec(n, dtypes.get(n, "int32_t")) for n in msl.output_names]  # int32: the unused output
    return build_kernel_source(msl.name, inputs, outputs, msl.source, msl.header, (), msl.atomic_outputs).text


def op_to_msl(msl: Any) -> str:
    """The body grouped by the kernel source line each part came from."""
    parts: list[str] = []
    for raw in msl.source.splitlines():
        m = _LINE.match(raw)
        if m is not None:
            line, file = int(m.group(1)), m.group(2)
            text = linecache.getline(file, line).strip()
            parts.append(f"--- {Path(file).name}:{line}: {text}")
        elif raw.strip():
            parts.append("    " + raw.strip())
    return "\n".join(parts)


def launch_metadata(compiled: Any) -> dict[str, object]:
    from .disk_cache import dump_msl_kernel, key_text

    data = dump_msl_kernel(compiled.msl)
    data.pop("source")
    data.pop("header")
    data["specialization"] = key_text(compiled.key)
    data["target"] = compiled.key.target
    data["origin"] = compiled.origin
    data["compile_seconds"] = compiled.compile_seconds
    return data


def hardware(backend: str) -> str:
    """The chip a launch runs on (Metal), or the emulator's host with the limits it emulates
    (`triton_metal/chip.py`: the same fixed values every Apple GPU has)."""
    if backend == "metal":
        chip = chip_info()
        return (f"{chip.device_name} ({chip.architecture}, {chip.family or 'unknown family'}), "
                f"{chip.threadgroup_memory_bytes} B threadgroup memory, "
                f"{chip.max_threads_per_threadgroup} threads per threadgroup, SIMD width {chip.simd_width}")
    return (f"{backend} on {platform.machine()} ({os.cpu_count()} cores): {THREADGROUP_MEMORY_BYTES} B "
            f"threadgroup memory, {MAX_THREADS_PER_THREADGROUP} threads per threadgroup, SIMD width "
            f"{SIMD_WIDTH} (emulated)")


def after_compile(compiled: Any, level: int) -> None:
    msl = compiled.msl
    if level >= 2:
        log(f"op-to-MSL mapping of {msl.name}:\n{op_to_msl(msl)}")
    if level >= 3:
        log(f"MSL of {msl.name} as MLX compiles it:\n{mlx_source(msl)}")
        log(f"hardware: {hardware(compiled.key.backend)}")
    folder = dump_dir(level)
    if folder is None:
        return
    target = folder / msl.name
    try:
        target.mkdir(parents=True, exist_ok=True)
        (target / "kernel.metal").write_text(mlx_source(msl), encoding="ascii")
        (target / "body.metal").write_text(msl.source, encoding="ascii")
        (target / "header.metal").write_text(msl.header, encoding="ascii")
        (target / "launch.json").write_text(json.dumps(launch_metadata(compiled), indent=2), encoding="utf-8")
    except OSError as error:
        log(f"could not write the dump folder {target}: {error}")


MAX_VERDICTS = 32
"""Verdicts kept per kernel in launch.json (the oldest go first)."""


def record_coverage(kernel_name: str, grid: tuple[int, int, int], scalars: dict[str, int],
                    verdicts: dict[str, Any]) -> None:
    """Add one launch's coverage verdicts to the kernel's launch.json, when dumps are on."""
    from .log import debug_level

    folder = dump_dir(debug_level())
    if folder is None:
        return
    path = folder / kernel_name / "launch.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        entries = list(data.get("coverage_verdicts", []))[-(MAX_VERDICTS - 1):]
        entries.append({
            "grid": list(grid), "scalars": scalars,
            "outputs": {o: {"proven": v.proven, "reason": v.reason} for o, v in verdicts.items()},
        })
        data["coverage_verdicts"] = entries
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    except (OSError, ValueError) as error:
        log(f"could not record coverage in {path}: {error}")
