"""Compiled launches on the emulator: the generated MSL run on the CPU, arrays written in place.

`EmulatorLauncher(msl, arg_names)` is built once per compiled variant; calling it with a
launch's bound values and grid runs the kernel through `backends.emulator.EmulatorKernel` (the
same kernel text `mx.fast.metal_kernel` would build: `build_kernel_source`).

Arrays (see `arrays/`):
* NumPy arrays are passed as flat views of their own memory, as inputs and as outputs alike, so
  the kernel's stores land in the caller's array and elements it does not store keep their
  values; atomics update the array itself (locks, counters and compare-and-swap loops see each
  other). A parameter that is both read and written is one buffer seen through both names:
  Triton's pointer semantics.
* a launch with an MLX array argument takes the Metal driver's path (`backends.metal.
  MetalLauncher`) with the emulator's `metal_kernel` in place of `mx.fast.metal_kernel`: inputs
  hold the contents from before the launch, outputs start fresh and are merged, started from
  an atomic identity or from a uniform array exactly as on a Mac, and the caller's arrays are
  rebound (`arr[...] = result`). The kernel runs when MLX evaluates the results, as on a Mac
  (`backends/emulator/lazy_mlx.py`; a fault then raises there, in the terms `_in_python_terms`
  gives). So what runs with MLX arrays here runs the same way on Metal, and what Metal must
  refuse is refused here too.

Inputs that the kernel reads through vector loads are padded to 8 elements when smaller
(metal_kernel passes smaller inputs in `constant` memory, which vector views cannot read).
Compiled emulator binaries are cached on disk by source hash (`toolchain.cache_dir()`), and
per launcher by the inputs' address spaces (0-d, under 8 elements, or device).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import partial
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..backends.metal.plan import SCALAR_NUMPY, LaunchPlan, launch_dims
from ..codegen.kernel import old_input_name
from ..backends.emulator.bounds import checks_enabled
from ..backends.emulator.errors import KernelFault
from ..backends.emulator.kernel import PrintRecords
from ..errors import LaunchError
from .device_asserts import check_status, has_asserts
from .device_prints import emit, printer, sites
from .arrays import host_buffer, metal_values, share_elements
from .arrays.mlx import is_mlx


_MSL_KERNEL = re.compile(r"kernel 'custom_kernel_\w*'")


class EmulatedMlx:
    """`mlx.core` whose `fast.metal_kernel` is the emulator's (same calls, same rules), its
    kernels' `tl.device_print` output going to `device_prints`, and the faults of its lazy
    launches (raised when MLX evaluates them) reworded by `faults`."""

    runs_device_prints = True
    """The Metal launcher's cue: prints are printed here, not reported as unavailable."""

    def __init__(self, device_prints: Callable[[PrintRecords], None] | None = None,
                 faults: Callable[[Exception], Exception] | None = None) -> None:
        import mlx.core as mx

        from ..backends.emulator import metal_kernel

        self._mx = mx
        self.fast = SimpleNamespace(
            metal_kernel=partial(metal_kernel, device_prints=device_prints, faults=faults)
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._mx, name)




class EmulatorLauncher:
    """Runs one compiled variant on the emulator (module docstring)."""

    def __init__(self, msl: Any, arg_names: Sequence[str], kernel_name: str | None = None,
                 twin: Any = None) -> None:
        self.msl = msl
        self.kernel_name = kernel_name
        self.twin = twin
        """For the Metal path: outputs -> the twin with written masks (`MetalLauncher`)."""
        self.plan = LaunchPlan.of(msl, arg_names)
        self.arg_names = tuple(arg_names)
        self.fast_math = msl.metadata.get("math_mode") == "fast"
        self._kernels: dict[tuple[int | bool, ...], Any] = {}
        self._array_args = tuple(sorted(
            {s.arg for s in self.plan.inputs if s.role == "array"} | {o.arg for o in self.plan.outputs if o.arg >= 0}
        ))
        self._metal: Any = None
        self._word_atomic_args = self.plan.word_atomic_args
        self._asserts = has_asserts(msl)
        self._prints = sites(msl)
        """The kernel's `tl.device_print` sites (empty: it prints nothing)."""

    def _kernel(self, inputs: list[np.ndarray]) -> Any:
        # 0: 0-d, 1: under 8 elements (constant), 2: device memory
        # bounds checks (on unless TRITON_METAL_EMULATOR_CHECKS=0) build another kernel
        shape_key = (*(0 if a.ndim == 0 else (1 if a.size < 8 else 2) for a in inputs), checks_enabled())
        kernel = self._kernels.get(shape_key)
        if kernel is None:
            from ..backends.emulator import EmulatorKernel
            from ..backends.emulator.signature import InputSpec, OutputSpec, build_kernel_source

            specs = [InputSpec(s.name, s.dtype, a.ndim, int(a.size)) for s, a in zip(self.plan.inputs, inputs)]
            outs = [OutputSpec(o.name, o.dtype) for o in self.plan.outputs]
            if self._asserts:
                outs.append(OutputSpec(self.msl.metadata["assert_output"], "uint32_t"))
            msl = self.msl
            source = build_kernel_source(
                msl.name, specs, outs, msl.source, msl.header, (), msl.atomic_outputs
            )
            kernel = EmulatorKernel.build(source, msl.source, msl.header, fast_math=self.fast_math)
            self._kernels[shape_key] = kernel
        return kernel

    def __call__(self, values: tuple[object, ...], grid: tuple[int, int, int]) -> None:
        for arg in self._array_args:
            if is_mlx(values[arg]):
                try:
                    self._metal_path()(metal_values(values, self.arg_names), grid)
                except KernelFault as fault:
                    raise self._in_python_terms(fault) from None
                return
        plan = self.plan
        buffers: dict[int, np.ndarray] = {}
        word_copies: list[tuple[np.ndarray, np.ndarray]] = []
        for arg in self._word_atomic_args:
            # its atomics update the aligned 32-bit word holding each element: run on a copy
            # that starts on a 4-byte boundary and holds whole words, written back afterwards;
            # the kernel gets the array's own elements (bounds checks count those), the padding
            # word half lying just past them
            real = host_buffer(values[arg], self.arg_names[arg])
            self._check_not_aliased(arg, real, values)
            copy = np.zeros(real.size + 1, real.dtype)[: real.size]
            copy[...] = real
            buffers[arg] = copy
            word_copies.append((real, copy))

        def buffer(arg: int) -> np.ndarray:
            b = buffers.get(arg)
            if b is None:
                b = buffers[arg] = host_buffer(values[arg], self.arg_names[arg])
            return b

        inputs: list[np.ndarray] = []
        for slot in plan.inputs:
            if slot.role == "array":
                arr = buffer(slot.arg)
                if slot.vector and arr.size < 8:
                    # 8 elements of memory behind the view, its own size for the checks
                    padded = np.zeros(8, dtype=arr.dtype)[: arr.size]
                    padded[...] = arr
                    arr = padded
                inputs.append(arr)
            elif slot.role == "scalar":
                inputs.append(np.asarray(values[slot.arg], dtype=SCALAR_NUMPY[slot.dtype]))
            else:
                inputs.append(np.asarray(grid, dtype=np.int32))
        outputs: list[np.ndarray] = []
        for out in plan.outputs:
            if out.arg < 0:  # a kernel that stores nothing still runs (its loads are checked)
                outputs.append(np.zeros(1, np.int32))
                continue
            arr = buffer(out.arg)
            if not arr.flags.writeable:
                raise LaunchError(
                    f"argument '{out.param}': the kernel stores to it but the array is read-only"
                )
            outputs.append(arr)
        kernel = self._kernel(inputs)
        launch_grid, threadgroup = launch_dims(grid, plan.threads, plan.spread)
        status = np.zeros(4, dtype=np.uint32) if self._asserts else None  # per launch: threads
        if status is not None:
            outputs.append(status)
        records = PrintRecords.for_launch() if self._prints else None
        try:
            kernel.launch(inputs, outputs, launch_grid, threadgroup, prints=records)
        except KernelFault as fault:
            raise self._in_python_terms(fault) from None
        finally:
            if records is not None:  # what ran before a fault is printed too
                emit(self._prints, records, self.kernel_name or self.msl.name)
        for real, copy in word_copies:
            real[...] = copy[: real.size]
        if status is not None:
            check_status(self.msl, status)

    def _check_not_aliased(self, arg: int, real: np.ndarray, values: Sequence[object]) -> None:
        """A 16-bit atomic argument runs on a copy: refuse another array argument sharing its
        elements, whose accesses would miss the copy's updates (in place they are one buffer)."""
        for other in self._array_args:
            if other != arg and share_elements(real, host_buffer(values[other], self.arg_names[other])):
                raise LaunchError(
                    f"kernel '{self.kernel_name or self.msl.name}': arguments '{self.arg_names[arg]}' and "
                    f"'{self.arg_names[other]}' are the same array (or overlapping views of one buffer), "
                    f"and '{self.arg_names[arg]}' takes 16-bit atomics, which the emulator runs on a "
                    "word-aligned copy of it: the other argument would not see them. Pass separate "
                    "arrays, or one array through one parameter"
                )

    def _in_python_terms(self, fault: KernelFault) -> KernelFault:
        """The run-time error naming the Python kernel and parameters, not their MSL names (the
        kernel line is the Python one already, through the MSL's `#line` directives)."""
        name = self.kernel_name or self.msl.name
        text = _MSL_KERNEL.sub(lambda _m: f"kernel '{name}'", str(fault), count=1)
        names = {s.name: self.arg_names[s.arg] for s in self.plan.inputs if s.role == "array"}
        names.update({o.name: o.param for o in self.plan.outputs})
        # the old contents beside an output kept relative to them (the Metal path's twin)
        names.update({old_input_name(o.name): o.param for o in self.plan.outputs})
        for msl, param in names.items():
            text = text.replace(f"'{msl}'", f"'{param}'")
        fault.args = (text,)
        return fault

    def _metal_path(self) -> Any:
        if self._metal is None:
            from ..backends.metal import MetalLauncher

            prints = printer(self._prints, self.kernel_name or self.msl.name) if self._prints else None
            mlx = EmulatedMlx(prints, faults=self._in_python_terms)  # lazy launches' faults
            self._metal = MetalLauncher(self.msl, self.plan, self.arg_names, mx=mlx,
                                        twin=self.twin)
        return self._metal
