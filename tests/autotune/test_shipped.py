"""The repository's `autotune_cache/`: every shipped result says its chip, date and how it was
measured; emulator results say so; none is stale for the example it was measured for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from triton_metal.runtime import autotune_cache, autotune_export

SHIPPED = Path(__file__).resolve().parents[2] / "autotune_cache"
ENTRIES = sorted(SHIPPED.glob("*/*.json"))


def test_the_folder_has_a_readme_and_entries():
    assert (SHIPPED / "README.md").is_file()
    assert ENTRIES, "autotune_cache/ ships no result"


@pytest.mark.parametrize("path", ENTRIES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_entry_is_complete_and_filed_under_its_chip(path):
    data = json.loads(path.read_text())
    assert data["format"] == autotune_cache.FORMAT_VERSION
    assert autotune_export.problems(data) == []
    assert path.parent.name == autotune_cache.chip_slug(data["chip"])
    assert data["best"] in data["configs"]
    measured = data["measured"]
    if data["chip"].startswith("emulator-"):
        assert measured["backend"] == "emulator" and "not on a GPU" in measured["note"]
    else:  # a Mac result is measured on Metal and filed under an Apple GPU architecture
        assert measured["backend"] == "metal" and data["chip"].startswith("applegpu_g")
    # the file name is what the autotuner looks up
    name = autotune_cache.EntryName(
        data["chip"], data["kernel"],
        autotune_cache.entry_hash(data["kernel_cache_key"], data["key"], data["configs"]),
    )
    assert name.relative == Path(path.parent.name) / path.name


def test_the_example_entry_matches_the_example_as_it_is():
    from examples import matmul_autotuned as ex

    mine = [json.loads(p.read_text()) for p in ENTRIES if json.loads(p.read_text())["kernel"] == "matmul_kernel"]
    assert mine, "no shipped result for examples/matmul_autotuned.py"
    for data in mine:
        assert data["kernel_cache_key"] == ex.matmul_kernel.cache_key, (
            "examples/matmul_autotuned.py changed since its result was shipped: re-run the example "
            "and export it (docs/autotune.md)")
        assert data["configs"] == [c.to_dict() for c in ex.CONFIGS]


def test_the_shipped_example_result_is_used_on_its_chip(monkeypatch):
    import numpy as np

    import triton_metal as triton
    from autotune_kernels import ScriptedBench
    from examples import matmul_autotuned as ex

    chip = autotune_cache.emulator_chip()
    if not (SHIPPED / autotune_cache.chip_slug(chip)).is_dir():
        pytest.skip(f"autotune_cache/ ships no result for this machine's chip ({chip})")
    monkeypatch.setenv(autotune_cache.SHIPPED_ENV, str(SHIPPED))
    bench = ScriptedBench()
    tuned = triton.autotune(ex.CONFIGS, key=["M", "N", "K"], do_bench=bench)(ex.matmul_kernel)
    a, b = ex.inputs()
    M, K = a.shape
    N = b.shape[1]
    c = np.zeros((M, N), np.float16)
    tuned[ex._grid(M, N)](a, b, c, M, N, K, *ex.strides(a), *ex.strides(b), *ex.strides(c))
    assert bench.calls == 0 and tuned.last_origin == "shipped"
    [entry] = [json.loads(p.read_text()) for p in ENTRIES if p.parent.name == autotune_cache.chip_slug(chip)]
    assert tuned.best_config.to_dict() == entry["best"]
    ref = a.astype(np.float32) @ b.astype(np.float32)
    assert np.max(np.abs(c.astype(np.float32) - ref)) <= 1e-2 * np.max(np.abs(ref))
