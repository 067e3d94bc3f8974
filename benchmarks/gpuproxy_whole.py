"""An op of several launches through the GPU proxy as it runs: back to back, the L2 flushed once.

`replay.py` times every launch alone, the L2 flushed before each: a later launch of an op then
reads what an earlier one wrote from memory, and each pays its own start. An op of several
launches runs them back to back, the later ones reading the earlier ones' outputs from the
cache they were written to (decode attention's combine reads pass 1's partials; on MLX both are
encoded in one command buffer). This script binds a capture's launches into such a chain, checks
every launch's outputs with the refs file's `check`, and times:

* the chain, its launches back to back after one flush of the L2;
* each launch alone, as `replay.py` does;
* a device copy of the op's own bytes: the arrays the chain reads from outside it and the arrays
  it writes that no later launch of it reads (decode attention: q, k, v, o, lse; not the
  partials, which are the op's scratch), and a copy of the bytes of each launch that moves at
  least as many. The share of a copy is taken against the fastest of these copies, the strictest
  yardstick: at these sizes a copy's time is not monotonic in its bytes (on an H200, 16.8 MB took
  11.3 us where 17.8 MB took 9.1);
* the refs file's `time_refs(launch, names)` references of the chain's first launch, where it
  has that function (decode attention: PyTorch's `scaled_dot_product_attention`).

From the project's root, the proxy copied to `.gpuproxy/gpuproxy` (its README):

    python3 benchmarks/gpuproxy_whole.py OUT.json CAPTURE:0,16 CAPTURE:1,16 \\
        --refs benchmarks/decode_proxy_refs.py          # GPU machine
    python3 benchmarks/gpuproxy_whole.py OUT.json CAPTURE:0,16 --refs ... --dry-run   # anywhere

`CAPTURE:I,J,...`: a capture folder and the indices of its launches, in the order they run. An
array that the capture took from an earlier launch's output is the output tensor of the latest
launch of the chain that writes an output of that name and shape (so one combine launch of a
capture serves every captured config of its pass 1).
The refs file gives `inputs(launch, device)` and `check(launch, names)`, as `replay.py`'s
`--inputs` and `--check-fn` take them, and may give `time_refs(launch, names)` (`--time-ref-fn`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Chain:
    capture: str
    indices: list[int]
    configs: list[str]
    op_bytes: int
    """The arrays the chain reads from outside it and writes for outside it, once each."""
    whole_us: float = 0.0
    """Median of the rounds' medians: the launches back to back, the L2 flushed before them."""
    alone_us: list[float] = field(default_factory=list)
    copy_us: float = 0.0
    """The fastest of `copies_us`."""
    copies_us: dict[str, float] = field(default_factory=dict)
    """A copy of the op's own bytes (`op`), and of the bytes of each launch moving at least as
    many (its index)."""
    errors: dict[str, float] = field(default_factory=dict)
    """`launch index:output` -> max|got - ref| / max(1, max|ref|) against the refs' float64."""
    refs_us: dict[str, float] = field(default_factory=dict)

    @property
    def pct_copy(self) -> float:
        return 100.0 * self.copy_us / self.whole_us if self.whole_us else 0.0


def _sources(launches: list[dict[str, Any]]) -> dict[tuple[int, int], tuple[int, str]]:
    """(position in the chain, input) -> (position, output) of the chain's launch it reads."""
    sources = {}
    for at, launch in enumerate(launches):
        for k, entry in enumerate(launch["inputs"]):
            if entry["role"] != "array" or entry.get("from_launch") is None:
                continue
            for before in range(at - 1, -1, -1):
                if any(out["param"] == entry["from_output"] and out["shape"] == entry["shape"]
                       for out in launches[before]["outputs"]):
                    sources[(at, k)] = (before, entry["from_output"])
                    break
    return sources


def _external_bytes(rp: Any, launches: list[dict[str, Any]]) -> int:
    """Bytes of the arrays the chain reads from outside it and writes that none of it reads."""
    sources = _sources(launches)
    read_inside = set(sources.values())
    total = 0
    for at, launch in enumerate(launches):
        for k, entry in enumerate(launch["inputs"]):
            if entry["role"] == "array" and (at, k) not in sources:
                total += rp.array_bytes(entry["shape"], entry["dtype"])
        for out in launch["outputs"]:
            if (at, out["param"]) not in read_inside:
                total += rp.array_bytes(out["shape"], out["dtype"])
    return total


def bind(rp: Any, meta: dict[str, Any], indices: list[int], refs: Any, gen: Any, device: str
         ) -> tuple[list[Any], list[Any]]:
    """The chain's launches as `replay.Replay`s, each reading the outputs of the earlier ones."""
    by_index = {launch["index"]: launch for launch in meta["launches"]}
    launches = [by_index[i] for i in indices]
    sources = _sources(launches)
    replays: list[Any] = []
    bound = []
    for at, launch in enumerate(launches):
        inputs = rp.Inputs(meta, launch, gen, device, rp.user_inputs([refs.inputs], launch, device))
        for k, entry in enumerate(launch["inputs"]):
            if (at, k) in sources:
                before, out = sources[(at, k)]
                inputs.kernel[k] = inputs.names[entry["param"]] = replays[before].raw[out]
        replays.append(rp.Replay(meta, launch, inputs, device, compile_kernel=device != "cpu"))
        bound.append((launch, inputs))
    return replays, bound


def run(spec: str, rp: Any, mc: Any, refs: Any, gen: Any, args: argparse.Namespace) -> Chain:
    import torch

    folder, listed = spec.rsplit(":", 1)
    meta = rp.load_capture(folder)
    indices = [int(v) for v in listed.split(",")]
    device = "cpu" if args.dry_run else "cuda"
    replays, bound = bind(rp, meta, indices, refs, gen, device)
    launches = [launch for launch, _ in bound]
    chain = Chain(folder, indices, [rp.short_config(launch.get("config")) for launch in launches],
                  _external_bytes(rp, launches))
    print(f"{folder} {indices}: {chain.op_bytes / 1e6:.1f} MB of the op's own arrays", flush=True)
    if args.dry_run:
        for launch, inputs in bound:
            print(f"  [{launch['index']}] {launch['kernel']}: inputs " +
                  ", ".join(f"{p} {getattr(t, 'shape', t)}" for p, t in inputs.names.items()))
        return chain

    def whole() -> None:
        for replay in replays:
            replay.alone()

    whole()
    torch.cuda.synchronize()
    for replay, (launch, inputs) in zip(replays, bound):
        for out, ref in (refs.check(launch, rp.namespace(launch, inputs)) or {}).items():
            chain.errors[f"{launch['index']}:{out}"] = rp.nerr(replay.raw[out], ref)
    rounds = range(args.rounds)
    chain.whole_us = 1e3 * statistics.median(mc.time_gpu(whole, reps=args.reps).median_ms for _ in rounds)
    chain.alone_us = [1e3 * statistics.median(mc.time_gpu(r.alone, reps=args.reps).median_ms for _ in rounds)
                      for r in replays]
    chain.copies_us = {"op": 1e3 * rp.copy_ms(chain.op_bytes, args)}
    chain.copies_us.update({str(launch["index"]): 1e3 * rp.copy_ms(rp.launch_bytes(launch), args)
                            for launch in launches if rp.launch_bytes(launch) >= chain.op_bytes})
    chain.copy_us = min(chain.copies_us.values())
    if hasattr(refs, "time_refs"):
        launch, inputs = bound[0]
        for label, fn in (refs.time_refs(launch, rp.namespace(launch, inputs)) or {}).items():
            chain.refs_us[label] = 1e3 * statistics.median(mc.time_gpu(fn, reps=args.reps).median_ms
                                                           for _ in rounds)
    print(f"  whole {chain.whole_us:.2f} us ({' + '.join(f'{t:.2f}' for t in chain.alone_us)} alone); "
          f"copies ({', '.join(f'{k} {v:.2f}' for k, v in chain.copies_us.items())} us): "
          f"{chain.pct_copy:.1f}% of the fastest; errors "
          + ", ".join(f"{k} {v:.1e}" for k, v in chain.errors.items())
          + "".join(f"; {label} {t:.2f} us" for label, t in chain.refs_us.items()), flush=True)
    return chain


def _module(path: str) -> Any:
    """The refs file as a module."""
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"gpuproxy_whole: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="JSON file of the results")
    parser.add_argument("specs", nargs="+", metavar="CAPTURE:I,J,...")
    parser.add_argument("--refs", required=True, help="a file with inputs(launch, device), check(launch, names)")
    parser.add_argument("--gpuproxy", default=".gpuproxy/gpuproxy")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--dry-run", action="store_true", help="bind the chains on the CPU; time nothing")
    args = parser.parse_args(argv)
    sys.path.insert(0, args.gpuproxy)
    import mslcuda as mc  # the proxy's modules
    import replay as rp
    import torch

    refs = _module(args.refs)
    gen = torch.Generator(device="cpu" if args.dry_run else "cuda").manual_seed(0)
    chains = [run(spec, rp, mc, refs, gen, args) for spec in args.specs]
    Path(args.out).write_text(json.dumps([{**asdict(c), "pct_copy": c.pct_copy} for c in chains], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
