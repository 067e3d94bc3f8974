"""A recording stand-in for `torch.mps.compile_shader` that runs what it receives on the emulator.

    recorder = RecordingCompiler()
    use_compiler(recorder, "cpu")          # or: with recorder.installed(): ...
    kernel[grid](cpu_tensor, ...)          # compiled with recorder(source), called like PyTorch
    recorder.sources, recorder.calls       # every source and every call, as PyTorch would see them

`recorder(source)` parses the kernels of the complete source (`kernel void name(...)`), and
`library.name(*args, threads=..., group_size=...)` binds the call exactly as PyTorch's
`_mps_MetalKernel.__call__` does (`torch/csrc/mps/Module.cpp`), with the CPU standing for the
GPU's shared memory:

* argument i goes to `[[buffer(i)]]`;
* a tensor is bound at its first element (`data_ptr()`, storage offset included); the
  parameter must be a `device T*` of the tensor's element type;
* a Python float is written as a 32-bit float (`constant float&`), a Python int or bool as a
  64-bit int (`constant long&` or `ulong&`), a list of ints as an array of long
  (`constant long*`); a parameter declared otherwise is refused, since on a Mac it would read
  the wrong bytes;
* `threads` (an int or 1 to 3 ints; absent: the first tensor's `numel()`) and `group_size`
  (as many ints; absent: `min(threads, 1024)` in 1-D, `(1024, 1, 1)` otherwise) become
  `dispatchThreads(threads, group_size)`.

Then the very source is compiled by the emulator (`EmulatorKernel`) and run on the tensors'
memory, so stores land in the tensors. `PYTORCH_MPS_FAST_MATH`, PyTorch's process-wide switch,
selects fast math as it does there.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..emulator.kernel import EmulatorKernel
from ..emulator.signature import KernelSource, Param, ParamKind

MAX_THREADS_PER_THREADGROUP = 1024

_MSL_TO_TYPE_STRING = {
    "half": "float16_t", "bfloat": "bfloat16_t", "long": "int64_t", "ulong": "uint64_t",
    "int": "int32_t", "uint": "uint32_t", "short": "int16_t", "ushort": "uint16_t",
    "char": "int8_t", "uchar": "uint8_t",
}
_TORCH_TYPE_STRINGS = {
    "float32": "float", "float16": "float16_t", "bfloat16": "bfloat16_t", "int32": "int32_t",
    "int64": "int64_t", "int16": "int16_t", "int8": "int8_t", "uint8": "uint8_t",
    "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t", "bool": "bool",
}
_KERNEL = re.compile(r"\bkernel\s+void\s+(?P<name>\w+)\s*\(")
_PARAM = re.compile(
    r"^\s*(?P<type>.+?)\s*(?P<name>\w+)\s*\[\[\s*(?P<attr>\w+)\s*(?:\(\s*(?P<index>\d+)\s*\))?\s*\]\]\s*$",
    re.S,
)


@dataclass(frozen=True)
class SignatureParam:
    ctype: str
    """As declared: "device float*", "constant long&", "uint3"."""
    name: str
    attribute: str
    """"buffer" or the Metal attribute's name."""
    index: int | None

    @property
    def space(self) -> str:
        return self.ctype.replace("const ", "").split()[0]

    @property
    def element(self) -> str:
        """The pointee/referenced type as an MLX type string ("float", "int64_t", ...)."""
        words = self.ctype.replace("const ", "").rstrip("*&").split()
        raw = words[-1] if words else ""
        return _MSL_TO_TYPE_STRING.get(raw, raw)


def parse_kernels(source: str) -> dict[str, tuple[SignatureParam, ...]]:
    """Each `kernel void name(...)` of the source with its parameters, in order."""
    kernels: dict[str, tuple[SignatureParam, ...]] = {}
    for m in _KERNEL.finditer(source):
        depth, start, i = 1, m.end(), m.end()
        while depth and i < len(source):
            depth += {"(": 1, ")": -1}.get(source[i], 0)
            i += 1
        params: list[SignatureParam] = []
        for piece in _split_top_level(source[start : i - 1]):
            pm = _PARAM.match(piece)
            if pm is None:
                raise ValueError(f"kernel '{m['name']}': cannot read parameter {piece.strip()!r}")
            index = int(pm["index"]) if pm["index"] is not None else None
            params.append(SignatureParam(" ".join(pm["type"].split()), pm["name"], pm["attr"], index))
        kernels[m["name"]] = tuple(params)
    return kernels


def _split_top_level(text: str) -> list[str]:
    pieces, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([<":
            depth += 1
        elif ch in ")]>":
            depth -= 1
        elif ch == "," and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
    if text[start:].strip():
        pieces.append(text[start:])
    return pieces


@dataclass
class RecordedCall:
    kernel: str
    args: tuple[object, ...]
    threads: tuple[int, ...]
    group_size: tuple[int, ...]


@dataclass
class RecordingCompiler:
    """The stand-in (module docstring); `sources` and `calls` record what PyTorch would get."""

    sources: list[str] = field(default_factory=list)
    calls: list[RecordedCall] = field(default_factory=list)

    def __call__(self, source: str) -> RecordedLibrary:
        self.sources.append(source)
        return RecordedLibrary(self, source, parse_kernels(source))

    @contextmanager
    def installed(self) -> Iterator[RecordingCompiler]:
        from .driver import _ACTIVE, use_compiler

        previous = _ACTIVE[0]
        use_compiler(self, "cpu")
        try:
            yield self
        finally:
            _ACTIVE[0] = previous


class RecordedLibrary:
    def __init__(self, recorder: RecordingCompiler, source: str, kernels: dict[str, Any]) -> None:
        self._recorder = recorder
        self._source = source
        self._kernels = kernels
        self._functions: dict[str, RecordedKernel] = {}

    def __getattr__(self, name: str) -> RecordedKernel:
        if name.startswith("__") or name not in self._kernels:
            raise AttributeError(f"the library has no kernel function '{name}'")
        function = self._functions.get(name)
        if function is None:
            function = self._functions[name] = RecordedKernel(
                self._recorder, self._source, name, self._kernels[name]
            )
        return function

    def __dir__(self) -> list[str]:
        return sorted(self._kernels)


class RecordedKernel:
    def __init__(
        self, recorder: RecordingCompiler, source: str, name: str, params: tuple[SignatureParam, ...]
    ) -> None:
        self._recorder = recorder
        self._source = source
        self.name = name
        self.params = params
        self._emulated: EmulatorKernel | None = None

    def __call__(
        self, *args: object, threads: Any = None, group_size: Any = None, arg_casts: Any = None,
        error_buf_idx: Any = None,
    ) -> None:
        if arg_casts is not None or error_buf_idx is not None:
            raise NotImplementedError("the stand-in binds arguments without arg_casts or error buffers")
        self._recorder.calls.append(RecordedCall(self.name, args, _dims(threads), _dims(group_size)))
        buffers = {p.index: p for p in self.params if p.attribute == "buffer"}
        if sorted(buffers) != list(range(len(args))):
            raise TypeError(
                f"{self.name}: called with {len(args)} arguments but the kernel declares buffers "
                f"{sorted(buffers)}; PyTorch binds argument i to [[buffer(i)]]"
            )
        scalars: list[np.ndarray] = []
        tensors: list[np.ndarray] = []
        kinds: dict[int, tuple[ParamKind, int]] = {}
        first_numel: int | None = None
        for i, value in enumerate(args):
            p = buffers[i]
            if _is_tensor(value):
                first_numel = value.numel() if first_numel is None else first_numel  # type: ignore[attr-defined]
                kinds[i] = (ParamKind.OUTPUT, len(tensors))
                tensors.append(_tensor_buffer(value, p, self.name))
            else:
                kinds[i] = (ParamKind.INPUT, len(scalars))
                scalars.append(_scalar_buffer(value, p, self.name))
        grid, group = _dispatch(threads, group_size, first_numel)
        kernel = self._kernel(kinds)
        kernel.launch(scalars, tensors, grid, group)

    def _kernel(self, kinds: dict[int, tuple[ParamKind, int]]) -> EmulatorKernel:
        if self._emulated is None:
            params: list[Param] = []
            for p in self.params:
                if p.attribute != "buffer":
                    params.append(Param(ParamKind.ATTRIBUTE, p.ctype, p.name, None, p.attribute, p.ctype, None))
                    continue
                assert p.index is not None
                kind, arg = kinds[p.index]
                by_ref = p.ctype.endswith("&")
                params.append(Param(kind, p.ctype, p.name, p.index, None, p.element, arg, by_ref))
            body_line = _body_line(self._source, self.name)
            ksrc = KernelSource(self.name, self._source, tuple(params), self.name, body_line)
            fast = os.environ.get("PYTORCH_MPS_FAST_MATH", "0") not in ("", "0")
            body = "\n".join(self._source.split("\n")[body_line - 1 :])
            with _bounds_checks(_declared_one_per_line(ksrc)):
                self._emulated = EmulatorKernel.build(ksrc, body, "", fast_math=fast)
        return self._emulated


def _body_line(source: str, name: str) -> int:
    """The 1-based line after the one holding the `{` that opens kernel `name`'s body."""
    m = re.search(r"\bkernel\s+void\s+" + re.escape(name) + r"\s*\(", source)
    assert m is not None
    depth, i = 1, m.end()
    while depth and i < len(source):
        depth += {"(": 1, ")": -1}.get(source[i], 0)
        i += 1
    brace = source.index("{", i)
    return source.count("\n", 0, brace) + 2


def _declared_one_per_line(source: KernelSource) -> bool:
    """Every buffer parameter is declared on a line of its own, as the emulator's bounds checks
    expect (`  <type> <name> [[buffer(i)]]`); a hand-written one-line signature is not."""
    from ..emulator.bounds import checked_params

    head = source.text.split("\n")[: source.body_line - 1]
    return all(
        any(line.startswith(f"  {p.ctype} {p.name} [[buffer({p.buffer})]]") for line in head)
        for p in checked_params(source)
    )


@contextmanager
def _bounds_checks(enabled: bool) -> Iterator[None]:
    """Build with the emulator's bounds checks only where they can read the signature."""
    if enabled:
        yield
        return
    previous = os.environ.get("TRITON_METAL_EMULATOR_CHECKS")
    os.environ["TRITON_METAL_EMULATOR_CHECKS"] = "0"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("TRITON_METAL_EMULATOR_CHECKS", None)
        else:
            os.environ["TRITON_METAL_EMULATOR_CHECKS"] = previous


def _is_tensor(value: object) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _tensor_buffer(t: Any, p: SignatureParam, kernel: str) -> np.ndarray:
    """The memory a Metal buffer bound at the tensor's first element lets the kernel reach, as a
    1-D NumPy view of the tensor's own storage (the kernel's stores land in the tensor)."""
    import torch

    expected = _TORCH_TYPE_STRINGS.get(str(t.dtype).removeprefix("torch."))
    if p.space != "device" or not p.ctype.endswith("*") or p.element != expected:
        raise TypeError(
            f"{kernel}: a {t.dtype} tensor is bound to buffer({p.index}), declared '{p.ctype}'; "
            f"PyTorch binds a tensor as 'device {expected}*'"
        )
    t = t.detach()
    extent = 0 if t.numel() == 0 else 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    flat = torch.as_strided(t, (extent,), (1,))
    if t.dtype == torch.bfloat16:
        return flat.view(torch.int16).numpy().view(np.uint16)
    return flat.numpy()


def _scalar_buffer(value: object, p: SignatureParam, kernel: str) -> np.ndarray:
    if isinstance(value, float):
        wanted, arr = ("constant float&",), np.asarray(value, dtype=np.float32)
    elif isinstance(value, int):  # bool included: pybind casts it as an int
        wanted, arr = ("constant long&", "constant ulong&"), np.asarray(int(value), dtype=np.int64)
    elif isinstance(value, (list, tuple)) and value and all(isinstance(v, int) for v in value):
        wanted, arr = ("constant long*", "constant ulong*"), np.asarray(value, dtype=np.int64)
    elif isinstance(value, (list, tuple)) and value and all(isinstance(v, float) for v in value):
        wanted, arr = ("constant float*",), np.asarray(value, dtype=np.float32)
    else:
        raise TypeError(f"{kernel}: PyTorch cannot bind an argument of type {type(value).__name__}")
    declared = p.ctype.replace("const ", "")
    if declared not in wanted:
        raise TypeError(
            f"{kernel}: buffer({p.index}) is declared '{p.ctype}', but PyTorch binds "
            f"{value!r} as '{wanted[0]}'"
        )
    if declared.startswith("constant ulong"):
        arr = arr.view(np.uint64)
    return arr


def _dims(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    if isinstance(value, int):
        return (value,)
    return tuple(int(v) for v in value)


def _dispatch(
    threads: Any, group_size: Any, first_numel: int | None
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    t = _dims(threads) or ((first_numel,) if first_numel is not None else ())
    g = _dims(group_size)
    if not t or len(t) > 3:
        raise RuntimeError("Number of threads is undefined or has wrong dimension")
    if g and len(g) != len(t):
        raise RuntimeError("size and group_size must have same number of dimensions")
    if not g:
        g = (min(t[0], MAX_THREADS_PER_THREADGROUP),) if len(t) == 1 else (MAX_THREADS_PER_THREADGROUP,)
    if int(np.prod(g)) > MAX_THREADS_PER_THREADGROUP:
        raise ValueError(f"Threadgroup size exceeds {MAX_THREADS_PER_THREADGROUP} limit")
    grid = tuple(t) + (1,) * (3 - len(t))
    group = tuple(g) + (1,) * (3 - len(g))
    return grid, group  # type: ignore[return-value]
