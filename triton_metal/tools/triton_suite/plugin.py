"""The pytest plugin the Triton-suite runner loads into pytest (and into every pytest-xdist
worker): it makes `import triton` resolve to triton_metal before any test file is imported, and
supplies the fixtures Triton's own `conftest.py` files would (`device` is "cpu": torch CPU
tensors, which the emulator and the interpreter run on in place). Process-wide changes make
the files runnable as they are: `exec` keeps the source of kernels it defines readable
(`exec_with_source`), `torch.cuda.get_device_capability()` answers (0, 0)
(`no_nvidia_capability`), and `torch.cuda.synchronize()` returns at once (`nothing_to_wait_for`)."""

from __future__ import annotations

import builtins
import itertools
import linecache
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from ...as_triton import install_as_triton

_PLAIN_EXEC = builtins.exec
_EXEC_NUMBERS = itertools.count(1)


def exec_with_source(source: Any, globals: Any = None, locals: Any = None, /, *args: Any, **kwargs: Any) -> Any:
    """`exec` that keeps the text of a kernel it defines readable, as IPython keeps a cell's.

    Triton's tests define kernels under the interpreter by `exec` of edited source text
    (`patch_kernel`). The compiler reads a kernel's source (the interpreter's legality check is
    a compile), and `inspect` finds none for text given to `exec`: each such text is compiled
    under a file name of its own, `<exec N>`, whose lines `linecache` holds. Only text that
    defines a `jit` function is registered; anything else runs as plain `exec` runs it."""
    if globals is None:  # plain `exec(text)` runs in its caller's namespace, not in this frame's
        caller = sys._getframe(1)
        globals, locals = caller.f_globals, caller.f_locals if locals is None else locals
    if isinstance(source, str) and "jit" in source:
        name = f"<exec {next(_EXEC_NUMBERS)}>"
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)
        source = compile(source, name, "exec", dont_inherit=True)
    return _PLAIN_EXEC(source, globals, locals, *args, **kwargs)


def no_nvidia_capability(device: Any = None) -> tuple[int, int]:
    """`torch.cuda.get_device_capability()` in the runner: (0, 0), no NVIDIA architecture.

    Triton's files ask it (some at import, in `skipif` conditions) to choose NVIDIA-specific
    paths and skips; the kernels run on an Apple GPU target whatever CUDA device the machine
    has, and a torch built without CUDA would raise instead of answering."""
    return (0, 0)


def nothing_to_wait_for(device: Any = None) -> None:
    """`torch.cuda.synchronize()` in the runner: returns at once. Triton's files call it after a
    launch before reading results; launches on CPU tensors have finished when they return (a
    torch built without CUDA would raise)."""


def _answer_capability() -> None:
    try:
        import torch
    except ImportError:
        return
    torch.cuda.get_device_capability = no_nvidia_capability
    torch.cuda.synchronize = nothing_to_wait_for


MARKERS = ("interpreter", "cpu", "forked", "multi_gpu", "gpu")
"""Markers Triton's test files use; registered so that pytest does not warn about them."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--suite-every", type=int, default=1, metavar="N",
        help="run every Nth collected test only (a sample spread over all parametrizations)",
    )
    parser.addoption(
        "--suite-offset", type=int, default=0, metavar="K",
        help="with --suite-every N, start the sample at the Kth collected test (0 to N - 1): "
             "the N offsets give N disjoint samples",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    every, offset = config.getoption("--suite-every"), config.getoption("--suite-offset")
    if not 0 <= offset < max(every, 1):
        raise pytest.UsageError(f"--suite-offset {offset} is not in 0..{max(every, 1) - 1} (--suite-every {every})")
    if every > 1:
        kept = items[offset::every]
        chosen = set(kept)
        config.hook.pytest_deselected(items=[item for item in items if item not in chosen])
        items[:] = kept


def pytest_configure(config: pytest.Config) -> None:
    """Loaded as a plugin (`-p`): the process-wide changes of the module docstring, before any
    test file is imported."""
    install_as_triton()
    builtins.exec = exec_with_source
    _answer_capability()
    for marker in MARKERS:
        config.addinivalue_line("markers", f"{marker}: a marker of Triton's own test files")


@pytest.fixture
def device() -> str:
    """The torch device Triton's tests allocate on: the CPU (see the module docstring)."""
    return "cpu"


@pytest.fixture
def with_allocator() -> Iterator[None]:
    """Triton's fixture: a scratch allocator installed for the test, removed after it."""
    import triton

    from .helpers import default_alloc_fn

    triton.set_allocator(default_alloc_fn)
    try:
        yield
    finally:
        from triton.runtime._allocation import NullAllocator

        triton.set_allocator(NullAllocator())


@pytest.fixture
def fresh_triton_cache(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Triton's fixture: an empty kernel cache of the test's own (`TRITON_METAL_CACHE_DIR`, read
    on every compile), the folder's path."""
    monkeypatch.setenv("TRITON_METAL_CACHE_DIR", str(tmp_path))
    yield str(tmp_path)


KNOBS_SKIP = "the test sets triton.knobs (Triton's configuration object), which has no counterpart here"


@pytest.fixture
def fresh_knobs() -> None:
    """Triton's fixture of a freshly reset `triton.knobs`: the test is skipped (`KNOBS_SKIP`)."""
    pytest.skip(KNOBS_SKIP)


@pytest.fixture
def fresh_knobs_including_libraries() -> None:
    pytest.skip(KNOBS_SKIP)


@pytest.fixture
def fresh_compilation_knobs() -> None:
    pytest.skip(KNOBS_SKIP)

