"""Compiling a specialization and handing its launches to the backend that executes them.

* `compile_variant(kernel, key) -> CompiledKernel`: the disk cache first (`disk_cache.py`: a hit
  skips the front end and the code generator), else `compiler.compile_msl` and a store; logs
  (`TRITON_METAL_DEBUG`), progress lines (`progress.py`) and dumps (`dumps.py`) follow. The disk
  cache keeps no pass IR, so a hit asked for dumps (level 2, or `TRITON_METAL_DUMP_DIR`) runs
  the passes again for them, and the level-1 log says the variant came from the cache. Every
  variant, compiled or read back, then passes Metal's buffer limit
  (`backends.metal.plan.check_buffer_limit`): the interpreter compiles each variant for
  legality through here too, so all backends refuse alike. A variant whose programs exchange
  data under acquire/release atomics warns where its target's MSL has no device fence
  (`warn_unordered`), on every backend.
* `make_launcher(kernel, compiled)`: the backend's callable `(values, grid) -> None` for the
  variant: `EmulatorLauncher`, the Metal driver's `MetalLauncher` (NumPy arguments turned into
  the flat buffers it copies in and back), the torch_mps `TorchMpsLauncher` (tensors bound in
  place through `torch.mps.compile_shader`), or the interpreter (`TRITON_METAL_BACKEND=
  interpreter`: compiled so compile errors surface, executed from the Python body).

The binder returns values as the caller passed them. The interpreter takes plain values:
Python scalars for scalar parameters (NumPy scalars are converted), the unwrapped value for
constexpr parameters, and arrays as their adapter's `host_view` (`arrays/`): NumPy and MLX
arrays untouched, torch CPU tensors as NumPy views of their memory (`to_launch_args`); a NumPy
view the compiled backends cannot pass (negative strides, strides that are not whole elements)
is refused with their error.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

import numpy as np

from ..backends.metal.plan import check_buffer_limit
from ..codegen.target import DEFAULT_TARGET, parse_target
from .backend import EMULATOR, INTERPRETER, METAL, TORCH_MPS
from .cache import CompiledKernel
from .grid import Grid3
from .arrays import PLAIN_TYPES, host_view, metal_values
from .log import debug_level, log
from .signature import kernel_signature
from .flat_args import flat_names, flattening, has_composites, host_values
from .specialization import (
    ArgSpec, ConstexprArg, DescriptorArg, PointerArg, ScalarArg, SpecializationKey, TupleArg, specialize_arg,
)


def to_launch_args(
    names: list[str], values: tuple[object, ...], facts: tuple[ArgSpec, ...]
) -> dict[str, object]:
    """Name -> value for the interpreter, in parameter order (see the module docstring)."""
    return {name: _interpreted(value, fact, name) for name, value, fact in zip(names, values, facts)}


def _interpreted(value: object, fact: ArgSpec, name: str) -> object:
    if isinstance(fact, ConstexprArg):
        return fact.value
    if isinstance(fact, ScalarArg) and _typed_otherwise(value, fact, name):
        from ..backends.interpreter import scalar_argument

        return scalar_argument(value, fact.ty)  # an annotated parameter's type (`v: tl.uint8`)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(fact, PointerArg):
        return host_view(value, name)
    if isinstance(fact, (DescriptorArg, TupleArg)):  # their arrays and scalars, each as above
        return host_values(value, fact, lambda v, f: _interpreted_part(v, f, name))
    return value


def _typed_otherwise(value: object, fact: ScalarArg, name: str) -> bool:
    """`fact` gives the scalar `value` another type than the value alone would get (the
    interpreter binds a bare value by what it is)."""
    plain = specialize_arg(value, name)
    return not (isinstance(plain, ScalarArg) and plain.ty == fact.ty)


def _interpreted_part(value: object, fact: ArgSpec, name: str) -> object:
    """A tuple's element: a compile-time one (None, a `tl.constexpr`, an int specialized as 1)
    stays a `tl.constexpr`, as the front end makes it; the interpreter binds a bare value of a
    tuple as a run-time scalar."""
    if isinstance(fact, ConstexprArg):
        from ..language import constexpr

        return constexpr(fact.value)
    return _interpreted(value, fact, name)


def launch_on_interpreter(kernel: Any, grid: Grid3, args: dict[str, object]) -> None:
    from ..backends import interpreter

    interpreter.launch(kernel, grid, args)


def compile_variant(kernel: Any, key: SpecializationKey, *, announce: bool = True) -> CompiledKernel:
    """The compiled variant for `key`: from the disk cache, or compiled and stored there.
    `announce=False` (the interpreter's legality check) prints no progress line: an interpreted
    launch leaves stderr to the kernel, as Triton's interpreter does."""
    from . import disk_cache, progress
    from .compiler import compile_msl, compiler_hash
    from .dependencies import source_files

    start = time.perf_counter()
    entry = disk_cache.entry_key(kernel.cache_key, key, compiler_hash(), source_files(kernel))
    hit = disk_cache.load(entry, key)
    if hit is not None:
        msl, ir_text = hit
        seconds = time.perf_counter() - start
        compiled = CompiledKernel(
            key=key, signature=None, module=None, compile_seconds=seconds, msl=msl,
            ir_text=ir_text, origin="disk",
        )
    else:
        result = compile_msl(kernel, key)
        disk_cache.store(entry, result.msl, result.ir_text, key)
        seconds = time.perf_counter() - start
        compiled = CompiledKernel(
            key=key, signature=kernel_signature(kernel, key), module=result.module,
            compile_seconds=seconds, msl=result.msl, ir_text=result.ir_text,
        )
    level = debug_level()
    dumping = level >= 2 or bool(os.environ.get("TRITON_METAL_DUMP_DIR"))
    if hit is None:
        if announce:
            progress.compiled(kernel.__name__, seconds)
    elif dumping:  # the disk cache keeps no pass IR: the passes run again, for their dump only
        compile_msl(kernel, key)
    if level >= 1:
        from .jit import describe_facts

        how = "compiled"
        if hit is not None:
            how = "read from the disk cache" + (" (its passes run again for the IR dump)" if dumping else "")
        log(f"compile {key.kernel} [{describe_facts(kernel.arg_names, key.args)}] "
            f"num_warps={key.num_warps} index_bits={key.index_bits} backend={key.backend}: {how} "
            f"in {seconds * 1e3:.1f} ms -> {compiled.msl.name}")
    if dumping:
        from . import dumps

        dumps.after_compile(compiled, level)
    check_buffer_limit(compiled.msl, kernel.__name__, definition(kernel))
    warn_unordered(compiled.msl)
    return compiled


def warn_unordered(msl: Any) -> None:
    """Warn where the kernel's programs exchange data under acquiring or releasing atomics and
    its target's MSL has no device fence (before 3.2): nothing then orders those accesses
    between threadgroups on a GPU (docs/codegen.md, "Memory order between programs"). The
    target decides, not the machine, so every backend warns alike for every variant compiled
    or read back (Python shows each message once)."""
    exchanged = msl.metadata.get("ordered_exchange") or ()
    if not exchanged:
        return
    target = parse_target(str(msl.metadata.get("target", DEFAULT_TARGET)))
    if target.has_device_fence:
        return
    warnings.warn(
        f"kernel {msl.name.rsplit('_', 1)[0]}: its programs exchange {', '.join(exchanged)} under acquire/"
        f"release atomics, but its target {target} (MSL {target.msl[0]}.{target.msl[1]}) has no "
        "device-scope fence: nothing orders those accesses between threadgroups, so the results may be "
        "wrong on a GPU; a target with MSL 3.2 or later (macOS 15; TRITON_METAL_TARGET) gives the ordering",
        RuntimeWarning, stacklevel=2)


def definition(kernel: Any) -> str:
    """`file:line` of the kernel's `def` (for errors that concern the kernel as a whole)."""
    code = getattr(getattr(kernel, "fn", None), "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else ""


def _twin(kernel: Any, compiled: CompiledKernel) -> Any:
    """(masked, relative, unwritten, marked, keyed) -> the variant's twin with written masks and
    outputs kept relative to their arrays (compiled on the Metal path's first need). Its masks
    and old contents add buffers, so it passes the buffer limit on its own: a kernel whose
    launches need no twin never meets its count."""

    def variant(masked: tuple[str, ...], relative: tuple[str, ...], unwritten: bool,
                marked: tuple[str, ...] = (), keyed: tuple[str, ...] = ()) -> Any:
        from .compiler import compile_twin

        twin = compile_twin(compiled, masked, relative, unwritten, marked, keyed)
        params = {o: p.name for p in compiled.msl.params for o in p.msl_outputs}
        check_buffer_limit(twin, kernel.__name__, definition(kernel),
                           tuple(params.get(o, o) for o in (*masked, *relative)), compiled.msl)
        return twin

    return variant


def make_launcher(kernel: Any, compiled: CompiledKernel) -> Any:
    facts = compiled.key.args
    if compiled.key.backend == INTERPRETER or not has_composites(facts):
        return _make_launcher(kernel, compiled, kernel.arg_names)
    # host tensor descriptors and tuples travel as their parts (runtime/flat_args.py)
    names = flat_names(kernel.__name__, kernel.arg_names, facts)
    return flattening(_make_launcher(kernel, compiled, names), facts)


def _make_launcher(kernel: Any, compiled: CompiledKernel, arg_names: list[str]) -> Any:
    backend = compiled.key.backend
    if backend == EMULATOR:
        from .launch_emulator import EmulatorLauncher

        return EmulatorLauncher(compiled.msl, arg_names, kernel.__name__,
                                twin=_twin(kernel, compiled))
    if backend == TORCH_MPS:
        from .launch_torch_mps import TorchMpsLauncher

        return TorchMpsLauncher(compiled.msl, arg_names)
    if backend == METAL:
        from ..backends.metal import LaunchPlan, MetalLauncher

        names = tuple(arg_names)

        def metal(values: tuple[object, ...], grid: Grid3) -> None:
            # the launcher of the `mlx.core` in use: one kept from another module would run there
            launcher = metal.launcher = metal.launcher.for_current_mlx()  # type: ignore[attr-defined]
            if PLAIN_TYPES.issuperset(map(type, values)):  # metal_values' own check, inlined
                launcher(values, grid)
            else:
                launcher(metal_values(values, names), grid)

        metal.launcher = MetalLauncher(  # type: ignore[attr-defined]
            compiled.msl, LaunchPlan.of(compiled.msl, arg_names), arg_names, twin=_twin(kernel, compiled))
        return metal
    assert backend == INTERPRETER
    facts = compiled.key.args
    names_list = list(kernel.arg_names)

    def interpret(values: tuple[object, ...], grid: Grid3) -> None:
        launch_on_interpreter(kernel, grid, to_launch_args(names_list, values, facts))

    return interpret
