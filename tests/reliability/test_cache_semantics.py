"""Triton's cache semantics: the cache key holds exactly the globals a kernel reads (its own
locals shadow module globals), so the README's kernel compiles once and a fresh process compiles
nothing, `@autotune` does not benchmark again in a fresh process, and a global `tl.constexpr`
changed after the first launch raises Triton's error instead of running the stale kernel."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.runtime.dependencies import cache_key

from reliability_support import ROOT, child_env, seeded

README = (ROOT / "README.md").read_text()
SNIPPET = re.search(r"```python\n(.*?)```", README, re.S).group(1)

COUNT_COMPILES = textwrap.dedent('''
    import json, subprocess, sys
    from triton_metal.runtime import launch
    compiles = []
    real = launch.compile_variant
    def counting(kernel, key):
        compiled = real(kernel, key)
        compiles.append(compiled.origin)
        return compiled
    launch.compile_variant = counting
    sys.modules["triton_metal.runtime.jit"].compile_variant = counting
    builds = []
    real_run = subprocess.run
    def run(argv, *a, **k):
        if "--version" not in argv:
            builds.append(argv[0])
        return real_run(argv, *a, **k)
    subprocess.run = run
''')


def _run(script: Path, cache: Path) -> dict:
    proc = subprocess.run([sys.executable, str(script)], env=child_env(cache), capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_readme_snippet_compiles_nothing_in_a_second_process(seed_cache, tmp_path):
    script = tmp_path / "readme.py"
    script.write_text(COUNT_COMPILES + SNIPPET + textwrap.dedent('''
        import numpy as np
        assert np.allclose(out, x + y)
        print(json.dumps({"origins": compiles, "builds": len(builds)}))
    '''))
    cache = seeded(seed_cache, tmp_path / "cache")
    first = _run(script, cache)
    assert first["origins"] == ["compiled"] and first["builds"] == 1, first
    second = _run(script, cache)  # x holds other random values: the key does not see them
    assert second == {"origins": ["disk"], "builds": 0}, second


def test_autotune_does_not_benchmark_again_in_a_fresh_process(seed_cache, tmp_path):
    script = tmp_path / "tuned.py"
    script.write_text(COUNT_COMPILES + textwrap.dedent('''
        import numpy as np
        import triton_metal as triton
        import triton_metal.language as tl

        benches = []
        def bench(fn, **kwargs):
            benches.append(1)
            fn()
            return [1.0, 1.0, 1.0]

        @triton.autotune([triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"],
                         do_bench=bench)
        @triton.jit
        def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            tl.store(out_ptr + offs, x * 2, mask=offs < n)

        x = np.random.rand(100).astype(np.float32)  # a global named as the kernel's local
        out = np.zeros_like(x)
        double[lambda m: (triton.cdiv(100, m["BLOCK"]),)](x, out, 100)
        assert np.allclose(out, x * 2)
        print(json.dumps({"benchmarks": len(benches), "origin": double.last_origin}))
    '''))
    cache = seeded(seed_cache, tmp_path / "cache")
    first = _run(script, cache)
    assert first["benchmarks"] == 2, first
    second = _run(script, cache)
    assert second["benchmarks"] == 0 and second["origin"] == "user", second


x = np.zeros(4, dtype=np.float32)  # shadowed by the kernels' own `x` below
SCALE = tl.constexpr(2)


@triton.jit
def _shadowing(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    tl.store(out_ptr + tl.arange(0, 4), x)


@triton.jit
def _scaled(out_ptr):
    tl.store(out_ptr + tl.arange(0, 4), tl.full((4,), SCALE, tl.int32))


def test_the_key_skips_globals_that_locals_shadow_and_keeps_those_read(monkeypatch):
    shadowing = cache_key(_shadowing)
    monkeypatch.setitem(globals(), "x", np.ones(4, dtype=np.float32))
    assert cache_key(_shadowing) == shadowing
    scaled = cache_key(_scaled)
    monkeypatch.setitem(globals(), "SCALE", tl.constexpr(3))
    assert cache_key(_scaled) != scaled


def test_a_changed_global_constexpr_raises_as_in_triton(monkeypatch):
    @triton.jit
    def scaled(out_ptr):
        tl.store(out_ptr + tl.arange(0, 4), tl.full((4,), SCALE, tl.int32))

    out = np.zeros(4, dtype=np.int32)
    scaled[(1,)](out)
    np.testing.assert_array_equal(out, [2] * 4)
    monkeypatch.setitem(globals(), "SCALE", tl.constexpr(5))
    with pytest.raises(RuntimeError, match=r"Global variable SCALE has changed since we compiled "
                       r"this kernel, from constexpr\[2\] to constexpr\[5\]"):
        scaled[(1,)](out)
    np.testing.assert_array_equal(out, [2] * 4)  # nothing ran
    monkeypatch.setitem(globals(), "SCALE", tl.constexpr(2))
    scaled[(1,)](out)  # back to the compiled value: runs again


def test_a_changed_closure_constexpr_raises_too():
    def make(cst):
        @triton.jit
        def closure(out_ptr):
            tl.store(out_ptr + tl.arange(0, 4), tl.full((4,), cst, tl.int32))

        return closure

    cst = tl.constexpr(42)
    kernel = make(cst)
    out = np.zeros(4, dtype=np.int32)
    kernel[(1,)](out)
    cst.value = 43
    with pytest.raises(RuntimeError, match=r"cst has changed since we compiled this kernel, "
                       r"from constexpr\[42\] to constexpr\[43\]"):
        kernel[(1,)](out)
    np.testing.assert_array_equal(out, [42] * 4)
