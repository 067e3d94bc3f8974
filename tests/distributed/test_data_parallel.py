"""`triton_metal` inside an `mx.distributed` program, on one machine: two ranks launched with
`mlx.launch -n 2 --backend ring` (localhost TCP).

* `examples/llama_data_parallel.py`: both ranks end with identical parameters, equal to one
  process stepping on the whole batch (to float32 rounding: the sum of two half-batch gradients
  is not the same sequence of additions as the whole batch's), and the mean of the ranks' losses
  is the whole batch's loss.
* Autotuning measures on rank 0 only: rank 1, whose own benchmark would pick another config,
  runs rank 0's; an autotuner that fails on rank 0 fails on every rank instead of hanging.

Each launch has a timeout and reports both ranks' output when it fails."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = Path(sys.executable).parent / "mlx.launch"
TIMEOUT = 300

pytestmark = pytest.mark.skipif(
    not LAUNCHER.is_file() or not mx.distributed.is_available(),
    reason=f"no mlx.launch beside {sys.executable}, or MLX without mx.distributed",
)


def _free_port() -> int:
    """A port the ring can start from: free now, and so is the next (one per rank)."""
    for _ in range(50):
        with socket.socket() as first, socket.socket() as second:
            first.bind(("127.0.0.1", 0))
            port = int(first.getsockname()[1])
            try:
                second.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port
    pytest.fail("no two consecutive free local ports for the ring")


def _launch(args: list[str], tmp_path: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRITON_METAL_", "MLX_"))}
    env.update(TRITON_METAL_BACKEND="emulator", PYTHONPATH=str(ROOT))
    command = [str(LAUNCHER), "-n", "2", "--backend", "ring", "--starting-port", str(_free_port()),
               "--python", sys.executable, *args]
    try:
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"two ranks did not finish within {TIMEOUT} s: {' '.join(command)}\n"
                    f"output: {error.stdout!r}\nerrors: {error.stderr!r}")
    if proc.returncode != 0:
        pytest.fail(f"two ranks failed (exit {proc.returncode}): {' '.join(command)}\n"
                    f"output:\n{proc.stdout[-3000:]}\nerrors:\n{proc.stderr[-6000:]}")
    return proc.stdout


def _records(out: str) -> list[dict]:
    """The JSON objects the ranks printed. The launcher forwards each rank's output in chunks, so
    two ranks' lines can arrive joined without their newline: scan, do not split on lines."""
    decoder, records, at = json.JSONDecoder(), [], out.find("{")
    while at != -1:
        try:
            record, end = decoder.raw_decode(out, at)
        except json.JSONDecodeError:  # a brace in other text: look further on
            at = out.find("{", at + 1)
            continue
        records.append(record)
        at = out.find("{", end)
    return records


def test_data_parallel_ranks_end_identical_and_equal_to_one_process(tmp_path, monkeypatch):
    from examples import llama_data_parallel as dp

    steps = 2
    out = _launch(["-m", "examples.llama_data_parallel", "--steps", str(steps),
                   "--save", str(tmp_path / "rank")], tmp_path)
    ranks = [dict(np.load(tmp_path / f"rank{r}.npz")) for r in (0, 1)]
    assert sorted(ranks[0]) == sorted(ranks[1]) and len(ranks[0]) == 10
    for name in ranks[0]:
        assert np.array_equal(ranks[0][name], ranks[1][name]), f"the ranks disagree on {name}"

    monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")
    block, losses = dp.train(steps, mx.distributed.init())  # one process, the whole batch
    assert mx.distributed.init().size() == 1
    single = dp.parameters(block)
    assert sorted(single) == sorted(ranks[0])
    for name, value in single.items():
        np.testing.assert_allclose(ranks[0][name], value, rtol=1e-5, atol=1e-6, err_msg=name)
    # Matched anywhere, not per line: the launcher may join the two ranks' lines.
    rank_losses = [[float(v) for v in found.split(", ")]
                   for found in re.findall(r"llama_data_parallel: rank \d of 2, losses ([-\d.e, ]+?) \(", out)]
    assert len(rank_losses) == 2, out
    np.testing.assert_allclose(np.mean(rank_losses, axis=0), losses, rtol=1e-5)


def test_autotuning_chooses_on_rank_0_for_every_rank(tmp_path):
    out = _launch([str(Path(__file__).with_name("tuned_ranks.py"))], tmp_path)
    results = sorted(_records(out), key=lambda r: r["rank"])
    assert [r["rank"] for r in results] == [0, 1] and all(r["size"] == 2 for r in results), out
    zero, one = results
    assert zero["ran"] == [32] and zero["origin"] == "benchmark" and zero["benchmarks"] == 2
    assert one["ran"] == [32] and one["origin"] == "rank 0" and one["benchmarks"] == 0
    assert "every config failed" in zero["error"]
    assert "rank 0 could not choose a config" in one["error"]
