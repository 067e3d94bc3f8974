"""Bandwidth and arithmetic throughput, measured with kernels written in the DSL itself.

* `test_memory_bandwidth(size_mb=256, ...)`: a copy kernel over `size_mb` MB (read once, written
  once: 2 x size bytes moved); the copy is checked, then timed.
* `test_compute_throughput(dtype="float32", ...)`: a kernel of independent multiply-add chains
  (8 per element, so the latency of one chain hides behind the others): 2 flops per FMA.

Both run on the active backend (Metal through MLX arrays, the emulator otherwise) and time with
`timing.time_ms` (host clock around each launch, the launch's MLX arrays evaluated). Results are
dataclasses that print one line and carry `backend`, so emulator figures are never mistaken for
GPU figures.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import language as tl
from ..runtime import active_backend_name, cdiv, jit
from .timing import load_mlx, time_ms

COPY_BLOCK = 4096
FMA_BLOCK = 1024
FMA_CHAINS = 8


@jit
def _copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


@jit
def _fma_kernel(x_ptr, out_ptr, n_iter, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    m = x * 0.0 + 0.9990234375
    c = x * 0.0 + 0.0009765625
    a0 = x
    a1 = x + 1.0
    a2 = x + 2.0
    a3 = x + 3.0
    a4 = x + 4.0
    a5 = x + 5.0
    a6 = x + 6.0
    a7 = x + 7.0
    for _ in range(n_iter):
        a0 = a0 * m + c
        a1 = a1 * m + c
        a2 = a2 * m + c
        a3 = a3 * m + c
        a4 = a4 * m + c
        a5 = a5 * m + c
        a6 = a6 * m + c
        a7 = a7 * m + c
    tl.store(out_ptr + offs, ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)))


@dataclass(frozen=True)
class BandwidthResult:
    backend: str
    bytes_moved: int
    ms: float
    """Median milliseconds per launch."""
    gb_per_s: float
    iters: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return (f"memory bandwidth ({self.backend}): {self.gb_per_s:.2f} GB/s "
                f"(copy of {self.bytes_moved / 2e6:.1f} MB in {self.ms:.3f} ms, median of {self.iters})")


@dataclass(frozen=True)
class ThroughputResult:
    backend: str
    dtype: str
    flops: int
    ms: float
    tflops: float
    iters: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return (f"{self.dtype} FMA throughput ({self.backend}): {self.tflops * 1e3:.2f} GFLOPS "
                f"({self.flops / 1e6:.1f} Mflop in {self.ms:.3f} ms, median of {self.iters})")


def _arrays(host: np.ndarray, mx: Any, on_metal: bool) -> tuple[Any, Any]:
    """Input and output as MLX arrays on Metal (no host copies in the timed launch), else NumPy."""
    if on_metal and mx is not None:
        src = mx.array(host)
        return src, mx.zeros_like(src)
    return host, np.zeros_like(host)


def _to_numpy(a: Any) -> np.ndarray:
    return a if isinstance(a, np.ndarray) else np.array(a)


def test_memory_bandwidth(size_mb: float = 256, *, iters: int = 10, warmup: int = 2, mx: Any = None) -> BandwidthResult:
    """Copy `size_mb` MB of float32 with a DSL kernel and report GB/s (module docstring)."""
    if size_mb <= 0:
        raise ValueError(f"test_memory_bandwidth: size_mb must be positive, got {size_mb}")
    mx = load_mlx() if mx is None else mx
    backend = active_backend_name()
    n = max(1, int(size_mb * 1e6) // 4)
    host = np.arange(n, dtype=np.float32)
    src, dst = _arrays(host, mx, backend == "metal")
    grid = (cdiv(n, COPY_BLOCK),)

    def run() -> Any:
        _copy_kernel[grid](src, dst, n, BLOCK=COPY_BLOCK, num_warps=8)
        return dst

    run()
    if not np.array_equal(_to_numpy(dst), host):
        raise RuntimeError("test_memory_bandwidth: the copy kernel produced wrong data on "
                           f"{backend}; run `python -m triton_metal.selftest` and report it")
    times = sorted(time_ms(run, warmup=warmup, iters=iters, mx=mx))
    ms = times[len(times) // 2]
    moved = 2 * n * 4
    return BandwidthResult(backend, moved, ms, moved / (ms * 1e-3) / 1e9, iters)


_DTYPES = {"float32": np.float32, "fp32": np.float32, "float16": np.float16, "fp16": np.float16}


def test_compute_throughput(dtype: str = "float32", *, n_elements: int = 1 << 20, n_iter: int = 256,
                            iters: int = 5, warmup: int = 1, mx: Any = None) -> ThroughputResult:
    """FMA throughput of `dtype` ("float32" or "float16") with a DSL kernel (module docstring)."""
    name = getattr(dtype, "name", str(dtype))
    np_dtype = _DTYPES.get(name)
    if np_dtype is None:
        raise ValueError(f"test_compute_throughput: dtype {dtype!r} not supported (use 'float32' or 'float16')")
    if n_elements % FMA_BLOCK:
        raise ValueError(f"test_compute_throughput: n_elements must be a multiple of {FMA_BLOCK}")
    mx = load_mlx() if mx is None else mx
    backend = active_backend_name()
    host = (np.arange(n_elements) % 7).astype(np_dtype) * np_dtype(0.125)
    x, out = _arrays(host, mx, backend == "metal")
    grid = (n_elements // FMA_BLOCK,)

    def run() -> Any:
        _fma_kernel[grid](x, out, n_iter, BLOCK=FMA_BLOCK, num_warps=8)
        return out

    run()
    expected = _fma_reference(host, n_iter)
    tol = 1e-3 if np_dtype == np.float32 else 5e-2
    got = _to_numpy(out).astype(np.float32)
    if not np.allclose(got, expected, rtol=tol, atol=tol):
        raise RuntimeError(f"test_compute_throughput: the FMA kernel produced wrong values on {backend}")
    times = sorted(time_ms(run, warmup=warmup, iters=iters, mx=mx))
    ms = times[len(times) // 2]
    flops = 2 * FMA_CHAINS * n_iter * n_elements
    return ThroughputResult(backend, np.dtype(np_dtype).name, flops, ms, flops / (ms * 1e-3) / 1e12, iters)


def _fma_reference(x: np.ndarray, n_iter: int) -> np.ndarray:
    """The FMA kernel's result in float32 (each chain converges towards 1)."""
    x = x.astype(np.float32)
    m, c = np.float32(0.9990234375), np.float32(0.0009765625)
    chains = [x + np.float32(k) for k in range(FMA_CHAINS)]
    for _ in range(n_iter):
        chains = [a * m + c for a in chains]
    return ((chains[0] + chains[1]) + (chains[2] + chains[3])) + ((chains[4] + chains[5]) + (chains[6] + chains[7]))


# pytest must not collect these when a test module imports them by name
test_memory_bandwidth.__test__ = False  # type: ignore[attr-defined]
test_compute_throughput.__test__ = False  # type: ignore[attr-defined]
