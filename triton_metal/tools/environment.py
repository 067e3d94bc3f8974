"""The environment check behind `python -m triton_metal.backends.metal.check_environment`.

`check_environment(mx=None, stream=sys.stdout) -> EnvironmentReport` prints one line per check,
each OK, INFO or MISSING with the fix, and says which backend launches will use. The report's
`ok` is False (and `main()` returns 1) when the configured backend cannot run: Metal requested
or chosen without a Metal device, the emulator without a C++ compiler, an unknown
`TRITON_METAL_BACKEND`, or a cache directory that cannot be written. Works on Linux (the
emulator's checks) as well as macOS.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

OK, INFO, MISSING = "OK", "INFO", "MISSING"
MIN_PYTHON = (3, 10)
MIN_MLX = (0, 32, 1)
MIN_MACOS = (14, 0)
"""bfloat needs MSL 3.1 (macOS 14); float atomics MSL 3.0 (macOS 13)."""


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""
    required: bool = False
    """A MISSING required check makes the configured backend unable to run."""


@dataclass
class EnvironmentReport:
    checks: list[Check] = field(default_factory=list)
    backend: str | None = None

    @property
    def ok(self) -> bool:
        return not any(c.status == MISSING and c.required for c in self.checks)

    def get(self, name: str) -> Check:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "backend": self.backend,
                "checks": [c.__dict__ for c in self.checks]}

    def __str__(self) -> str:
        width = max((len(c.name) for c in self.checks), default=0)
        lines = ["triton_metal environment"]
        for c in self.checks:
            lines.append(f"  [{c.status:<7}] {c.name.ljust(width)}  {c.detail}")
            if c.fix and c.status != OK:
                lines.append(f"  {'':9} {'':{width}}  fix: {c.fix}")
        verdict = "ready" if self.ok else "NOT ready"
        lines.append(f"backend for launches: {self.backend or 'none'} ({verdict})")
        return "\n".join(lines)


def _version_tuple(text: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in text.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def _import_mlx() -> Any:
    try:
        import mlx.core as mx
    except Exception:  # noqa: BLE001 - any import failure means MLX is unusable
        return None
    return mx


def _metal(mx: Any) -> bool:
    try:
        return bool(mx.metal.is_available())
    except Exception:  # noqa: BLE001
        return False


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".check-"):
            pass
        return True
    except OSError:
        return False


def check_environment(mx: Any = None, stream: TextIO | None = sys.stdout) -> EnvironmentReport:
    """Run every check, print the report to `stream` (None: print nothing), return it."""
    report = EnvironmentReport()
    add = report.checks.append
    py = sys.version_info
    add(Check("python", OK if py[:2] >= MIN_PYTHON else MISSING, f"{platform.python_version()} ({sys.executable})",
              f"use Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer", required=True))
    system = platform.system()
    mac = platform.mac_ver()[0] if system == "Darwin" else ""
    if system == "Darwin":
        good = _version_tuple(mac) >= MIN_MACOS
        add(Check("os", OK if good else MISSING, f"macOS {mac or '?'} ({platform.machine()})",
                  "macOS 14 or newer is needed for bfloat kernels (macOS 13 for float atomics)"))
    else:
        add(Check("os", INFO, f"{system} {platform.release()} ({platform.machine()}): no Metal here; "
                  "compiled kernels run on the CPU emulator", "run on a Mac with Apple silicon for the GPU"))

    mx = _import_mlx() if mx is None else mx
    has_metal = False
    if mx is None:
        add(Check("mlx", MISSING, "mlx is not importable", "pip install 'mlx>=0.32.1' (Linux: 'mlx[cpu]')"))
    else:
        version = str(getattr(mx, "__version__", "?"))
        good = _version_tuple(version) >= MIN_MLX
        add(Check("mlx", OK if good else MISSING, f"mlx {version}",
                  f"pip install -U 'mlx>={'.'.join(map(str, MIN_MLX))}'"))
        has_metal = _metal(mx)
        add(Check("metal", OK if has_metal else INFO,
                  "Metal device available (mx.metal.is_available())" if has_metal
                  else "MLX reports no Metal device (CPU build of MLX)",
                  "" if has_metal else "on a Mac: pip install mlx (not mlx[cpu]) on Apple silicon, macOS 14+"))
        if has_metal:
            from ..backends.metal.chip import chip_info

            info = chip_info(mx)
            add(Check("gpu", OK, f"{info.device_name}, architecture {info.architecture}"
                      + (f" ({info.family}, tier {info.tier})" if info.family else "")))

    compiler_ok = False
    try:
        from ..backends.emulator.toolchain import find_compiler

        compiler = find_compiler()
        compiler_ok = True
        add(Check("emulator compiler", OK, compiler.identity))
    except Exception as error:  # noqa: BLE001 - CompilerNotFound, or a broken compiler
        add(Check("emulator compiler", MISSING, f"no C++ compiler for the emulator ({error})",
                  "install g++ 12+ (Debian/Ubuntu: apt-get install g++) or set CXX"))

    from ..runtime.cache_files import configured_root

    root = configured_root()  # the configured folder, not the temporary one used in its place
    writable = _writable(root)
    add(Check("cache dir", OK if writable else MISSING, f"{root} (TRITON_METAL_CACHE_DIR)",
              "set TRITON_METAL_CACHE_DIR to a writable folder", required=True))
    dump = os.environ.get("TRITON_METAL_DUMP_DIR")
    level = os.environ.get("TRITON_METAL_DEBUG", "")
    add(Check("dump dir", INFO, f"{dump} (TRITON_METAL_DUMP_DIR)" if dump else
              "not set: shaders are dumped only at TRITON_METAL_DEBUG>=2, to ~/.triton/metal/shaders",
              "") )
    add(Check("debug level", INFO, f"TRITON_METAL_DEBUG={level or '0'}"))

    from ..errors import LaunchError
    from ..runtime.backend import EMULATOR, METAL, active_backend_name

    try:
        backend = active_backend_name()
    except LaunchError as error:
        add(Check("backend", MISSING, str(error), "unset TRITON_METAL_BACKEND or choose metal|emulator|interpreter",
                  required=True))
        backend = None
    else:
        if backend == METAL and not has_metal:
            add(Check("backend", MISSING, "metal requested but there is no Metal device", "unset TRITON_METAL_BACKEND",
                      required=True))
        elif backend == EMULATOR and not compiler_ok:
            add(Check("backend", MISSING, "the emulator needs a C++ compiler (see above)",
                      "install g++ or set TRITON_METAL_INTERPRET=1 to use the NumPy interpreter", required=True))
        else:
            how = {METAL: "Metal through mx.fast.metal_kernel", EMULATOR: "the CPU emulator (same MSL, run by g++)"}
            add(Check("backend", OK, f"{backend}: {how.get(backend, 'the NumPy interpreter')}"))
    report.backend = backend
    if stream is not None:
        print(report, file=stream)
    return report


def main(argv: list[str] | None = None) -> int:
    report = check_environment()
    return 0 if report.ok else 1
