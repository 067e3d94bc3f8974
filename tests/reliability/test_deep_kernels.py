"""Deep but legal kernels compile and run: 150 nested `@jit` calls, an expression of 450 chained
`+`; a kernel deeper than the compiler's raised limit gets a CompilationError naming it, never a
bare RecursionError. The interpreter runs the same kernels to the same values."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from triton_metal.errors import CompilationError
from triton_metal.runtime import compiler


def _module(tmp_path: Path, name: str, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / f"{name}.py"
    path.write_text("import triton_metal as triton\nimport triton_metal.language as tl\n" + text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _nested_calls(tmp_path: Path, depth: int):  # type: ignore[no-untyped-def]
    parts = ["@triton.jit\ndef f0(x):\n    return x + 1\n"]
    parts += [f"@triton.jit\ndef f{i}(x):\n    return f{i - 1}(x) + 1\n" for i in range(1, depth)]
    parts.append(f"@triton.jit\ndef kernel(o):\n    r = tl.arange(0, 4)\n    tl.store(o + r, f{depth - 1}(r))\n")
    return _module(tmp_path, f"nested_{depth}_{tmp_path.name}", "\n".join(parts))


def _chained_sum(tmp_path: Path, terms: int):  # type: ignore[no-untyped-def]
    expr = " + ".join(["r"] * terms)
    text = f"@triton.jit\ndef kernel(o):\n    r = tl.arange(0, 4)\n    tl.store(o + r, {expr})\n"
    return _module(tmp_path, f"chained_{terms}_{tmp_path.name}", text)


@pytest.mark.parametrize("interpret", [False, True], ids=["compiled", "interpreter"])
def test_150_nested_jit_calls(tmp_path, monkeypatch, interpret):
    if interpret:
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    out = np.zeros(4, dtype=np.int32)
    _nested_calls(tmp_path, 150).kernel[(1,)](out)
    np.testing.assert_array_equal(out, np.arange(4) + 150)


@pytest.mark.parametrize("interpret", [False, True], ids=["compiled", "interpreter"])
def test_450_chained_additions(tmp_path, monkeypatch, interpret):
    if interpret:
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    out = np.zeros(4, dtype=np.int32)
    _chained_sum(tmp_path, 450).kernel[(1,)](out)
    np.testing.assert_array_equal(out, np.arange(4) * 450)


def test_past_the_raised_limit_the_error_names_the_kernel(tmp_path, monkeypatch):
    monkeypatch.setattr(compiler, "DEEP_RECURSION_LIMIT", 50)  # below what the kernel needs
    out = np.full(4, -1, dtype=np.int32)
    with pytest.raises(CompilationError) as error:
        _chained_sum(tmp_path, 450).kernel[(1,)](out)
    text = str(error.value)
    assert "kernel 'kernel' nests too deeply" in text and "split long expressions" in text
    assert not isinstance(error.value, RecursionError)
    np.testing.assert_array_equal(out, -1)
