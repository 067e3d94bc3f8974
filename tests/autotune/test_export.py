"""The export command: the user's results copied into the shipped layout, then read as defaults."""

from __future__ import annotations

import json
import shutil

import numpy as np

import triton_metal as triton
from triton_metal.runtime import autotune_cache, autotune_export

from autotune_kernels import ScriptedBench, fill_block, grid_of

N = 300


def tune(bench) -> triton.Autotuner:
    cfgs = [triton.Config({"BLOCK": b}, num_warps=1) for b in (32, 64)]
    tuned = triton.autotune(cfgs, key=["n"], do_bench=bench)(fill_block)
    tuned[grid_of(N)](np.zeros(N, np.int32), N)
    return tuned


def test_export_then_use_as_shipped_defaults(tmp_path, session_cache, monkeypatch, capsys):
    tune(ScriptedBench([[2, 2, 2], [1, 1, 1]]))
    out = tmp_path / "contrib"
    assert autotune_export.main(["export", "--out", str(out)]) == 0
    [path] = sorted(out.glob("*/*.json"))
    assert path.parent.name == autotune_cache.chip_slug(autotune_cache.emulator_chip())
    data = json.loads(path.read_text())
    assert data["exported"].endswith("Z") and autotune_export.problems(data) == []
    assert "wrote" in capsys.readouterr().out
    # the exported folder, as shipped, answers for a user without results of their own
    shutil.rmtree(session_cache / "autotune")
    monkeypatch.setenv("TRITON_METAL_AUTOTUNE_SHIPPED_DIR", str(out))
    bench = ScriptedBench()
    again = tune(bench)
    assert bench.calls == 0 and again.last_origin == "shipped"
    assert again.best_config.kwargs == {"BLOCK": 64}


def test_incomplete_entries_are_not_exported(tmp_path, session_cache, capsys):
    tune(ScriptedBench())
    [path] = sorted((session_cache / "autotune").glob("*/*.json"))
    data = json.loads(path.read_text())
    del data["measured"]["how"]
    path.write_text(json.dumps(data))
    assert autotune_export.main(["export", "--all", "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "missing measured.how" in err and "nothing to export" in err
    assert not (tmp_path / "o").exists()


def test_export_of_another_chip_and_list(tmp_path, capsys):
    tune(ScriptedBench())
    assert autotune_export.main(["export", "--chip", "applegpu_g15s-Apple M3 Max",
                                 "--out", str(tmp_path / "o")]) == 1
    assert autotune_export.main(["list"]) == 0
    listed = capsys.readouterr().out
    assert "fill_block" in listed and autotune_cache.emulator_chip() in listed
