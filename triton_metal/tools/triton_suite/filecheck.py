"""`triton._filecheck` under the Triton-suite runner: Triton's private front-end test helpers,
answered honestly for this package.

- `run_parser(kernel, args=(), kwargs={})` runs this package's front end on `kernel` as a launch
  with these arguments would (the same binding, specialization and refusals, `MockTensor`s for
  arrays) and returns the IR module it builds (`triton_metal.ir`, not Triton's MLIR). A kernel the
  front end refuses raises its `CompilationError`, as Triton's `run_parser` does.
- `run_filecheck(name, text, checks)` runs FileCheck (the `filecheck` package, a test
  dependency) on any text, as Triton's does; it raises `ValueError` with FileCheck's report when
  the CHECK lines do not match.
- `run_filecheck_test(kernel, ...)` and `@filecheck_test` check Triton's TTIR with LLVM's
  FileCheck against the `# CHECK` lines of the kernel's source. This package produces no TTIR: they
  run the front end first (so a refusal still surfaces as itself), then raise `NoTTIRError`.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any


class NoTTIRError(NotImplementedError):
    """A FileCheck of Triton's TTIR was asked; this package's front end builds its own IR."""


def run_filecheck(name: str, module_str: str, check_template: str) -> None:
    """FileCheck `check_template`'s CHECK lines against `module_str`; `ValueError` on a mismatch
    (`name` names the check in the report)."""
    with tempfile.NamedTemporaryFile("w", suffix=".checks") as checks:
        checks.write(check_template)
        checks.flush()
        proc = subprocess.run(
            [sys.executable, "-m", "filecheck", checks.name], input=module_str, capture_output=True, text=True
        )
    if proc.returncode != 0:
        raise ValueError(f"FileCheck of {name} failed:\n{proc.stdout}{proc.stderr}")


def run_parser(
    kernel_fn: Any, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None, target: Any = None
) -> Any:
    """The IR module this package's front end builds for `kernel_fn` called with `args` and
    `kwargs`. Triton's `sanitize_overflow` option (a keyword there) is accepted and ignored:
    integer overflow checks have no counterpart here. `target` is Triton's stub GPU target:
    ignored (the active target is used)."""
    from ...runtime.compiler import type_check

    named = {k: v for k, v in (kwargs or {}).items() if k != "sanitize_overflow"}
    key = kernel_fn.specialization(*args, **named)
    return type_check(kernel_fn, key)


def run_filecheck_test(kernel_fn: Any, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None) -> None:
    """Runs the front end on `kernel_fn`, then raises `NoTTIRError`: its `# CHECK` lines are
    about Triton's TTIR, which this package does not produce."""
    run_parser(kernel_fn, args, kwargs)
    raise NoTTIRError(
        f"FileCheck of '{kernel_fn.__name__}': no TTIR here. Its CHECK lines read Triton's TTIR "
        "(MLIR); triton_metal's front end compiled the kernel to its own IR, which they cannot match"
    )


def filecheck_test(fn: Any) -> Callable[[], None]:
    """A pytest test of the `@jit` function `fn`: `run_filecheck_test(fn)`."""

    @functools.wraps(fn)
    def test_fn() -> None:
        run_filecheck_test(fn)

    return test_fn
